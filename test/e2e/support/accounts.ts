/**
 * What the accounts end-to-end files (several bots or apps of one platform in one gateway, the
 * named ones from SWITCHBOARD_CONFIG's `accounts`) share: their config file, one in-process
 * gateway at a time, the readiness and metrics of every account, the binding and the histories
 * each account's conversations saw, the outbox records of a reply stranded by a removed account,
 * and the wait for a reply through one bot.
 */
import { afterAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../../../src/util/clock.ts";
import { botUser, type TelegramEmulator } from "../../emulators/telegram/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../../support/gateway.ts";
import type { FakeLlmServer } from "../../support/llm/fake-llm-server.ts";
import type { E2eFixture } from "./fixture.ts";
import { e2eGatewayEnv } from "./gateway-env.ts";
import { eventually } from "./gateway-process.ts";

/** How long a reply through an account's bot, or a change to an outbox record, may take. */
const REPLY_TIMEOUT_MS = 20_000;

/** The instructions the binding of the two-bot files gives the `support` account. */
export const SUPPORT_INSTRUCTIONS = "You are ACME support.";

/** What a `<channel>:dm` surface does in the accounts files unless one says otherwise. */
const QUEUED_TERMINAL = { inputPolicy: "queue", delivery: "terminal" };

/** The SWITCHBOARD_CONFIG of an accounts file, for one channel. */
export interface AccountsConfig {
  /** The channel's named accounts, by name; without, the file has no `accounts`. */
  accounts?: Record<string, Record<string, unknown>>;
  /** A binding that gives the conversations of `account` these `instructions`. */
  binding?: { account: string; instructions: string };
  /** The surfaces; without, `<channel>:dm` queues what comes in during a run and sends the finished answer. */
  surfaces?: Record<string, unknown>;
  /** More top-level settings, such as `budgets`. */
  more?: Record<string, unknown>;
}

/** Writes `config` of `channel` as a version-1 SWITCHBOARD_CONFIG `name` in `dir`; returns its path. */
export function writeConfig(dir: string, name: string, channel: string, config: AccountsConfig): string {
  const { accounts, binding, surfaces, more } = config;
  const file = join(dir, name);
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      surfaces: surfaces ?? { [`${channel}:dm`]: QUEUED_TERMINAL },
      ...more,
      ...(accounts ? { accounts: { [channel]: accounts } } : {}),
      ...(binding
        ? { bindings: [{ match: { channel, account: binding.account }, instructions: binding.instructions }] }
        : {}),
    }),
  );
  return file;
}

/**
 * The environment of a gateway on the fixture's directory and model, with the config file
 * `configFile` and the platform's variables `variables` (the default account's, and those the
 * config's `${VAR}`s name).
 */
export function gatewayEnv(
  fixture: E2eFixture<unknown>,
  configFile: string,
  variables: Record<string, string>,
): Record<string, string> {
  return e2eGatewayEnv({
    dir: fixture.dir.path,
    llm: fixture.llm,
    extra: { SWITCHBOARD_CONFIG: configFile, ...variables },
  });
}

/** Closes the emulators of the file's other accounts (the fixture closes the default one's) after its tests. */
export function closeAfterAll(...emulators: ReadonlyArray<{ close(): Promise<void> | void }>): void {
  afterAll(async () => {
    for (const emulator of emulators) await emulator.close();
  });
}

/**
 * The config of a two-bot file, written to with-support.json or without-support.json in `dir`:
 * with `withSupport`, the account `support` of `channel` (its `settings`) and a binding that gives
 * it SUPPORT_INSTRUCTIONS; without, no accounts. Returns its path.
 */
export function writeSupportConfig(
  dir: string,
  channel: string,
  withSupport: boolean,
  settings: Record<string, unknown>,
  surfaces?: Record<string, unknown>,
): string {
  return withSupport
    ? writeConfig(dir, "with-support.json", channel, {
        accounts: { support: settings },
        binding: { account: "support", instructions: SUPPORT_INSTRUCTIONS },
        ...(surfaces ? { surfaces } : {}),
      })
    : writeConfig(dir, "without-support.json", channel, surfaces ? { surfaces } : {});
}

/**
 * One gateway composed in this process at a time, on the real clock: `start(env)` stops the one
 * running (if any) and starts another; the file's afterAll stops the last. `pacing: "fast"` (the
 * default) sets FAST_PACING; `"platform"` keeps each channel's own limits.
 */
export function oneGatewayAtATime(options: { serveRoutes?: boolean; pacing?: "fast" | "platform" } = {}) {
  let running: InProcessGateway | null = null;
  const stop = async () => {
    await running?.stop({ graceMs: 1000 });
    running = null;
  };
  afterAll(stop);
  return {
    async start(env: Record<string, string>): Promise<InProcessGateway> {
      await stop();
      running = await startInProcessGateway(env, {
        clock: systemClock,
        ...((options.pacing ?? "fast") === "fast" ? { limits: FAST_PACING } : {}),
        ...(options.serveRoutes ? { serveRoutes: true } : {}),
      });
      return running;
    },
    stop,
  };
}

/**
 * Asserts the default account of `channel` and each of `named` are ready (readiness lines
 * `channel:<channel>` and `channel:<channel>:<name>`) and have each accepted an inbound message.
 */
export async function expectServing(
  running: InProcessGateway,
  channel: string,
  named: readonly string[],
): Promise<void> {
  const { checks } = await running.gateway.readiness();
  expect(checks[`channel:${channel}`]?.ok).toBe(true);
  for (const name of named) expect(checks[`channel:${channel}:${name}`]?.ok).toBe(true);
  const metrics = await running.gateway.renderMetrics();
  for (const account of ["default", ...named])
    expect(metrics).toContain(
      `switchboard_inbound_accepted_total{channel="${channel}",account="${account}"}`,
    );
}

/** The messages of the model's first request whose last user text holds `text`, as JSON. */
function historyOf(llm: FakeLlmServer, text: string): string {
  const request = llm.requestsContaining(text)[0];
  if (!request)
    throw new Error(`the model saw no request with "${text}": did its message reach the gateway?`);
  return JSON.stringify(request.messages);
}

/** Asserts the model saw `instructions` with `boundText` (an account's binding) and not with `otherText`. */
export function expectBoundOnly(
  llm: FakeLlmServer,
  instructions: string,
  boundText: string,
  otherText: string,
): void {
  expect(historyOf(llm, boundText)).toContain(instructions);
  expect(historyOf(llm, otherText)).not.toContain(instructions);
}

/**
 * Asserts two conversations kept their own histories: each `[later, earlier]` pair's later message
 * was sent with its own earlier one and without the other's.
 */
export function expectOwnHistories(
  llm: FakeLlmServer,
  first: readonly [later: string, earlier: string],
  second: readonly [later: string, earlier: string],
): void {
  expect(historyOf(llm, first[0])).toContain(first[1]);
  expect(historyOf(llm, first[0])).not.toContain(second[1]);
  expect(historyOf(llm, second[0])).toContain(second[1]);
  expect(historyOf(llm, second[0])).not.toContain(first[1]);
}

/** Resolves once the gateway logged refusing (or ignoring) a sender; `what` names the refusal. */
export function refusedSender(running: InProcessGateway, what: string) {
  return eventually(
    () => running.logs.find((r) => r.event === "ingress.denied" || r.event === "ingress.ignored"),
    10_000,
    what,
  );
}

/** The pending outbox record whose markdown contains `contains`, once the gateway wrote it. */
export function pendingReply(
  running: InProcessGateway,
  contains: string,
  what = "the support reply to wait for a retry",
) {
  return eventually(
    async () =>
      (await running.gateway.stores.outbox.list({ state: "pending" })).find((r) =>
        r.markdown.includes(contains),
      ),
    REPLY_TIMEOUT_MS,
    what,
  );
}

/**
 * A reply stranded by its account's removal: waits for the pending reply holding `text` on
 * `withAccount` (its bot's sends failing for now) and asserts it is `accountId`'s, then starts the
 * gateway without the account (`startWithout`) and resolves once that gateway failed the record.
 */
export async function strandedReply(
  withAccount: InProcessGateway,
  text: string,
  accountId: string,
  startWithout: () => Promise<InProcessGateway>,
) {
  const stranded = await pendingReply(withAccount, text);
  expect(stranded.account).toBe(accountId);
  const without = await startWithout();
  const failed = await eventually(
    async () => {
      const record = await without.gateway.stores.outbox.show(stranded.id);
      return record?.state === "failed" ? record : null;
    },
    REPLY_TIMEOUT_MS,
    "the stranded reply to fail",
  );
  return { stranded, without, failed };
}

/** An emulator's own wait: the probe's first truthy value, or an error naming `what` after `timeoutMs`. */
interface WaitsFor {
  waitFor<T>(probe: () => T | undefined | null | false, timeoutMs: number, what: string): Promise<T>;
}

/**
 * Waits, by `bot`'s own waitFor, until `texts()` (what one bot sent into one chat) holds a text
 * containing `contains`; resolves with it. `who` names the bot in the timeout's message.
 */
export function replyThrough(
  bot: WaitsFor,
  texts: () => readonly string[],
  contains: string,
  who: string,
): Promise<string> {
  return bot.waitFor(
    () => texts().find((t) => t.includes(contains)),
    REPLY_TIMEOUT_MS,
    `${who}'s reply containing "${contains}"`,
  );
}

/** The token of the Telegram files' second bot, the account `support`. */
export const TELEGRAM_SUPPORT_TOKEN = "222222222:AASupportBotTokenForTests_abcdefghij";

/** Adds the Telegram files' support bot (id 222222222) to the emulator of the default bot. */
export function addTelegramSupportBot(personal: TelegramEmulator): TelegramEmulator {
  return personal.addBot({
    token: TELEGRAM_SUPPORT_TOKEN,
    bot: botUser(222222222, "acme_support_bot", "Support"),
  });
}

/** What `bot` sent into the Telegram chat `chatId`. */
export function telegramBotTexts(bot: TelegramEmulator, chatId: number): string[] {
  return bot
    .messages(chatId)
    .filter((m) => m.fromBot)
    .map((m) => m.visibleText);
}
