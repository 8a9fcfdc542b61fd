// Kept per platform: only Discord makes a resend safe (its nonce).
/**
 * An interrupted Discord send end to end: the gateway process dies (SIGKILL) while a message create
 * hangs after Discord already stored it. Discord sends are idempotent (nonce + enforce_nonce), so
 * after the restart the record is sent again with the same nonce and the chat shows it once.
 */

import { expect, test } from "bun:test";
import type { OutboxRecord } from "../../outbox/types.ts";
import { startDiscordEmulator } from "../emulators/discord/index.ts";
import { runCliJson } from "./support/cli.ts";
import { discordGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";
import { outboxRecordOf, waitUntilSettled } from "./support/settled.ts";

const fixture = useE2eFixture("switchboard-e2e-outbox-dc-", () =>
  startDiscordEmulator({ heartbeatIntervalMs: 1_000 }),
);
const { platform: discord } = fixture;
const alice = discord.createUser("alice");
const env = () =>
  discordGatewayEnv(fixture, {
    surfaces: { "discord:dm": { inputPolicy: "queue", delivery: "terminal" } },
    allowed: [alice.id],
  });
const gateway = fixture.gatewayAroundTests(env);

test("a create that hung past Discord's commit is retried after SIGKILL with the same nonce and shows once", async () => {
  const dmChannelId = discord.dmChannelId(alice.id);
  const createsInDm = () =>
    discord.restCalls.filter(
      (call) =>
        call.route === "POST /channels/:id/messages" && call.path === `/channels/${dmChannelId}/messages`,
    );
  const answers = () =>
    discord
      .visibleMessages(dmChannelId)
      .filter(
        (message) => message.author.id === discord.bot.id && message.content === "echo: hang on discord",
      );

  discord.failNext("POST /channels/:id/messages", { kind: "hang", afterCommit: true });
  discord.sendDm(alice.id, "hang on discord");
  await discord.waitFor(() => createsInDm().length === 1, 15_000, "the hanging create");
  expect(answers()).toHaveLength(1); // Discord stored it; the gateway never got the answer

  const dbPath = env().SWITCHBOARD_DB!;
  const row = outboxRecordOf(dbPath, "echo: hang on discord");
  expect(row.state).toBe("sending");

  await gateway.crashAndRestart();

  const record = await eventually(
    async () => {
      const shown = await runCliJson<OutboxRecord>(["outbox", "show", row.id], { SWITCHBOARD_DB: dbPath });
      return shown.state === "delivered" ? shown : undefined;
    },
    15_000,
    "the requeued record to be delivered",
  );
  const creates = createsInDm();
  expect(creates).toHaveLength(2);
  const [first, retry] = creates.map((call) => call.body as { nonce: string; enforce_nonce: boolean });
  expect(retry!.nonce).toBe(first!.nonce);
  expect(retry!.enforce_nonce).toBe(true);
  expect(creates[1]!.dedupedByNonce).toBe(true);

  await waitUntilSettled(dbPath);
  const shownOnce = answers();
  expect(shownOnce).toHaveLength(1);
  expect(record.receipt?.messageIds).toEqual([shownOnce[0]!.id]);
  expect(record.history.map((entry) => entry.action)).toContain("recovered");
}, 45_000);
