/**
 * `POST /api/send` against a real gateway process and the Telegram emulator: a send that hangs
 * is interrupted by SIGKILL, and after the restart the record is ambiguous (Telegram has no
 * idempotent send), never sent a second time, and the same request again answers that record.
 */
import { expect, test } from "bun:test";
import type { OutboxRecord } from "../../outbox/types.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-api-send-tg-", startTelegramEmulator);
const { platform: telegram } = fixture;
const alice = user(5101, "Alice");
const OPERATOR = "api-send-operator-token-01";
const gateway = fixture.gatewayAroundTests(() =>
  telegramGatewayEnv(fixture, { allowed: [alice.id], extra: { SWITCHBOARD_OPERATOR_TOKEN: OPERATOR } }),
);
const auth = { authorization: `Bearer ${OPERATOR}`, "content-type": "application/json" };

test("a send interrupted by SIGKILL is ambiguous after the restart and is not sent again", async () => {
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "hello" });
  await telegram.waitForMessage(alice.id, (m) => m.fromBot, 15_000);
  const body = JSON.stringify({
    channel: "telegram",
    target: String(alice.id),
    text: "Your parcel is out for delivery",
    idempotencyKey: "parcel-42",
  });
  telegram.injectFault("sendMessage", { kind: "hang" });
  const sent = await fetch(`${gateway.process.url}/api/send`, { method: "POST", headers: auth, body });
  expect(sent.status).toBe(202);
  const { outboxId } = (await sent.json()) as { outboxId: string };
  const sendsOfIt = () =>
    telegram
      .callsOf("sendMessage")
      .filter((call) => String(call.params.text) === "Your parcel is out for delivery");
  await eventually(() => sendsOfIt().length === 1, 15_000, "the hanging sendMessage");

  await gateway.crashAndRestart();

  const record = await eventually(
    async () => {
      const response = await fetch(`${gateway.process.url}/api/outbox/${outboxId}`, { headers: auth });
      const shown = (await response.json()) as OutboxRecord;
      return shown.state === "ambiguous" ? shown : undefined;
    },
    15_000,
    "the interrupted send to be ambiguous",
  );
  expect(record.markdown).toBe("Your parcel is out for delivery");
  const again = await fetch(`${gateway.process.url}/api/send`, { method: "POST", headers: auth, body });
  expect(await again.json()).toEqual({ outcome: "duplicate", outboxId, state: "ambiguous" });
  // The operator settles it; the chat's next answer then goes out, and the send never again.
  const resolved = await fetch(`${gateway.process.url}/api/outbox/${outboxId}/resolve`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({ outcome: "failed", note: "not in the chat" }),
  });
  expect(resolved.status).toBe(200);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "still there?" });
  await telegram.waitForMessage(alice.id, (m) => m.visibleText === "echo: still there?", 15_000);
  expect(sendsOfIt()).toHaveLength(1);
}, 45_000);
