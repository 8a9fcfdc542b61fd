/**
 * What the start-up log says about who may talk to the bot (JSON lines on stderr, no terminal):
 * an empty allowlist warns that nobody may; with pairing on, users get in by a pairing code, so
 * the log says how to admit them instead of warning.
 */
import { expect, test } from "bun:test";
import { startTelegramEmulator } from "../emulators/telegram/index.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-allowlist-hints-", startTelegramEmulator);
fixture.stopGatewaysAfterEach();

test.each([
  { allowed: "pairing", events: ["gateway.pairing"] },
  { allowed: "pairing,1001", events: ["gateway.pairing"] },
  { allowed: "", events: ["gateway.nobody_allowed"] },
  { allowed: "1001", events: [] },
])(
  "TELEGRAM_ALLOWED_USERS=$allowed: the start-up log says $events",
  async ({ allowed, events }) => {
    const gateway = await fixture.startGateway(
      telegramGatewayEnv(fixture, {
        allowed: allowed === "" ? [] : allowed.split(","),
        dbFile: "hints.sqlite",
      }),
      GATEWAY_START_TIMEOUT_MS,
    );
    // The hints follow gateway.started; Slack's "not configured" line is the last of them.
    await eventually(
      () =>
        gateway.events().some((e) => e.event === "gateway.channel_not_configured" && e.channel === "slack"),
      5000,
      "the start-up hints",
    );
    const hints = gateway
      .events()
      .filter((e) => e.event === "gateway.nobody_allowed" || e.event === "gateway.pairing");
    expect(hints.map((e) => e.event)).toEqual([...events]);
    for (const hint of hints) expect(hint.channel).toBe("telegram");
    if (events[0] === "gateway.pairing")
      expect(String(hints[0]?.hint)).toContain("npx switchboard access approve CODE");
    // Pretty lines would break this test's parsing: without a terminal the log is JSON.
    expect(gateway.logs.filter((line) => line.startsWith("{")).length).toBeGreaterThan(3);
  },
  30_000,
);
