/**
 * A platform's SDK is loaded only when its channel is configured: the registry
 * (src/gateway/channels.ts) and every channel module are read at startup, and a module loads its
 * adapter only in create(). A Telegram-only gateway carries no discord.js or Bolt. Checked in a
 * fresh process, since this one has loaded every SDK for other tests.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/runtime.ts";

const ROOT = join(import.meta.dir, "..", "..");

function loadedAfterBuilding(env: Record<string, string>): Record<string, boolean> {
  const dir = tempDir("switchboard-channel-modules-");
  try {
    const script = join(dir.path, "probe.ts");
    writeFileSync(
      script,
      `import { buildChannels } from ${JSON.stringify(join(ROOT, "src/gateway/channel-adapters.ts"))};
       import { loadConfig } from ${JSON.stringify(join(ROOT, "src/gateway/config/index.ts"))};
       import ${JSON.stringify(join(ROOT, "src/gateway/main.ts"))};
       import { systemClock } from ${JSON.stringify(join(ROOT, "src/util/clock.ts"))};
       import { silentLogger } from ${JSON.stringify(join(ROOT, "src/util/log.ts"))};
       const loaded = () => Object.fromEntries(["grammy", "discord.js", "@slack/bolt"].map((name) =>
         [name, Object.keys(require.cache).some((path) => path.includes("/node_modules/" + name + "/"))]));
       const atStart = loaded();
       buildChannels(loadConfig(${JSON.stringify({ ...env, SWITCHBOARD_DATA_DIR: dir.path })}), { clock: systemClock, logger: silentLogger });
       console.log(JSON.stringify({ atStart, built: loaded() }));`,
    );
    const run = Bun.spawnSync([process.execPath, script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "" },
    });
    if (run.exitCode !== 0) throw new Error(`probe failed: ${run.stderr.toString()}`);
    const { atStart, built } = JSON.parse(run.stdout.toString()) as Record<string, Record<string, boolean>>;
    expect(atStart).toEqual({ grammy: false, "discord.js": false, "@slack/bolt": false });
    return built!;
  } finally {
    dir.cleanup();
  }
}

test("a Telegram-only gateway loads grammY and neither discord.js nor Bolt", () => {
  expect(
    loadedAfterBuilding({
      TELEGRAM_BOT_TOKEN: "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11",
      TELEGRAM_ALLOWED_USERS: "1",
      OPENROUTER_API_KEY: "test-key",
    }),
  ).toEqual({ grammy: true, "discord.js": false, "@slack/bolt": false });
}, 30_000);

test("a Discord-only gateway loads discord.js and neither grammY nor Bolt", () => {
  expect(
    loadedAfterBuilding({
      DISCORD_BOT_TOKEN: "test-discord-token",
      DISCORD_ALLOWED_USERS: "1",
      OPENROUTER_API_KEY: "test-key",
    }),
  ).toEqual({ grammy: false, "discord.js": true, "@slack/bolt": false });
}, 30_000);

test("a Slack-only gateway loads Bolt and neither grammY nor discord.js", () => {
  expect(
    loadedAfterBuilding({
      SLACK_BOT_TOKEN: "xoxb-1-test-bot-token",
      SLACK_APP_TOKEN: "xapp-1-test-app-token",
      SLACK_ALLOWED_USERS: "U012AB3CD",
      OPENROUTER_API_KEY: "test-key",
    }),
  ).toEqual({ grammy: false, "discord.js": false, "@slack/bolt": true });
}, 30_000);
