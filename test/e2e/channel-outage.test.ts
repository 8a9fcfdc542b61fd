/**
 * One platform's outage is not the gateway's: a channel whose API fails at start is reported as
 * degraded while the rest of the gateway serves, and is started again with backoff.
 */
import { expect, test } from "bun:test";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-outage-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(1001, "Alice");
const TOKEN = "operator-token-for-tests-0123456789";

test("Telegram failing at start: the gateway starts, /readyz says degraded, and Telegram is started again once it answers", async () => {
  telegram.faults.add("getMe", { kind: "server_error", status: 502, description: "Bad Gateway" }, 2);
  const gateway = await fixture.startGateway(
    telegramGatewayEnv(fixture, { allowed: [alice.id], extra: { SWITCHBOARD_OPERATOR_TOKEN: TOKEN } }),
    GATEWAY_START_TIMEOUT_MS,
  );
  const failed = gateway.events().find((e) => e.event === "channel.start_failed");
  expect(failed).toMatchObject({ channel: "telegram", attempt: 1, retryInMs: 1000 });

  const ready = await fetch(`${gateway.url}/readyz`);
  expect(ready.status).toBe(200);
  const body = (await ready.json()) as { ready: boolean; checks: Record<string, Record<string, unknown>> };
  expect(body.checks["channel:telegram"]).toMatchObject({ ok: false, degraded: true });
  expect(String(body.checks["channel:telegram"]?.detail)).toContain("not started");
  // The operator API serves meanwhile.
  const runs = await fetch(`${gateway.url}/api/runs`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(runs.status).toBe(200);

  await eventually(
    () => gateway.events().some((e) => e.event === "channel.recovered"),
    15_000,
    "Telegram to start",
  );
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "are you there now" });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("are you there now"),
    15_000,
  );
  const after = (await (await fetch(`${gateway.url}/readyz`)).json()) as {
    checks: Record<string, { ok: boolean }>;
  };
  expect(after.checks["channel:telegram"]?.ok).toBe(true);
}, 60_000);

test("Discord and Slack unreachable at start: the gateway starts and reports both as degraded", async () => {
  const other = await fixture.startGateway(
    e2eGatewayEnv({
      dir: dir.path,
      llm,
      dbFile: "unreachable.sqlite",
      extra: {
        DISCORD_BOT_TOKEN: "discord.token.for-tests",
        DISCORD_API_URL: "http://127.0.0.1:1/api",
        DISCORD_ALLOWED_USERS: "1",
        SLACK_BOT_TOKEN: "xoxb-for-tests",
        SLACK_APP_TOKEN: "xapp-for-tests",
        SLACK_API_URL: "http://127.0.0.1:1/api",
        SLACK_ALLOWED_USERS: "U1",
      },
    }),
    GATEWAY_START_TIMEOUT_MS,
  );
  const ready = await fetch(`${other.url}/readyz`);
  expect(ready.status).toBe(200);
  const body = (await ready.json()) as { checks: Record<string, { ok: boolean; degraded?: boolean }> };
  expect(body.checks["channel:discord"]).toMatchObject({ ok: false, degraded: true });
  expect(body.checks["channel:slack"]).toMatchObject({ ok: false, degraded: true });
  expect(
    other
      .events()
      .filter((e) => e.event === "channel.start_failed")
      .map((e) => e.channel),
  ).toEqual(expect.arrayContaining(["discord", "slack"]));
}, 30_000);
