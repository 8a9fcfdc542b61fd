/**
 * `POST /api/send` against a real gateway process and the Discord emulator: the create hangs after
 * Discord stored the message, the gateway is SIGKILLed, and after the restart the record is sent
 * again with the same nonce, so the channel shows it exactly once.
 */
import { expect, test } from "bun:test";
import type { OutboxRecord } from "../../outbox/types.ts";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-api-send-dc-", () =>
  startDiscordEmulator({ heartbeatIntervalMs: 1_000 }),
);
const { platform: discord } = fixture;
const alice = discord.createUser("alice");
const OPERATOR = "api-send-operator-token-02";
const gateway = fixture.gatewayAroundTests(() =>
  discordGatewayEnv(fixture, { allowed: [alice.id], extra: { SWITCHBOARD_OPERATOR_TOKEN: OPERATOR } }),
);
const auth = { authorization: `Bearer ${OPERATOR}`, "content-type": "application/json" };

test("a send whose create hung past Discord's commit is retried after SIGKILL and shows once", async () => {
  const dmChannelId = discord.dmChannelId(alice.id);
  const text = "Your build finished";
  const creates = () =>
    discord.restCalls.filter(
      (call) =>
        call.route === "POST /channels/:id/messages" &&
        (call.body as { content?: string } | undefined)?.content === text,
    );
  const shown = () =>
    discord
      .visibleMessages(dmChannelId)
      .filter((message) => message.author.id === discord.bot.id && message.content === text);

  discord.failNext("POST /channels/:id/messages", { kind: "hang", afterCommit: true });
  const sent = await fetch(`${gateway.process.url}/api/send`, {
    method: "POST",
    headers: auth,
    body: JSON.stringify({
      channel: "discord",
      target: `dc:${dmChannelId}`,
      text,
      idempotencyKey: "build-7",
    }),
  });
  expect(sent.status).toBe(202);
  const { outboxId } = (await sent.json()) as { outboxId: string };
  await discord.waitFor(() => creates().length === 1, 15_000, "the hanging create");
  expect(shown()).toHaveLength(1);

  await gateway.crashAndRestart();

  const record = await eventually(
    async () => {
      const response = await fetch(`${gateway.process.url}/api/outbox/${outboxId}`, { headers: auth });
      const current = (await response.json()) as OutboxRecord;
      return current.state === "delivered" ? current : undefined;
    },
    15_000,
    "the requeued send to be delivered",
  );
  expect(creates()).toHaveLength(2);
  expect(creates()[1]!.dedupedByNonce).toBe(true);
  expect(shown()).toHaveLength(1);
  expect(record.receipt?.messageIds).toEqual([shown()[0]!.id]);
}, 45_000);
