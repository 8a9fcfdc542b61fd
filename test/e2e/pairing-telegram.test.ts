/**
 * Pairing end to end on Telegram: TELEGRAM_ALLOWED_USERS=pairing,<id>, the gateway composed in
 * this process (no process is needed here), grammY against the Telegram emulator, the fake model
 * server, and the operator CLI on the SQLite file.
 */

import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { systemClock } from "../../src/util/clock.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";
import { waitUntilSettled } from "./support/settled.ts";

const TIMEOUT = 20_000;
const fixture = useE2eFixture("switchboard-e2e-pairing-tg-", startTelegramEmulator);
const { platform: telegram } = fixture;
const alice = user(4001, "Alice");
const mallory = user(4002, "Mallory");
const eve = user(4003, "Eve");

const env = () => telegramGatewayEnv(fixture, { allowed: ["pairing", alice.id] });
const start = () => startInProcessGateway(env(), { clock: systemClock });
const cliEnv = () => ({ SWITCHBOARD_DB: env().SWITCHBOARD_DB! });

const botTexts = (userId: number) =>
  telegram
    .messages(userId)
    .filter((m) => m.fromBot)
    .map((m) => m.visibleText);
const codesIn = (userId: number) =>
  botTexts(userId).flatMap((text) => [...text.matchAll(/pairing code is ([A-Z0-9]{8})/g)].map((m) => m[1]!));

function openCodeRows(): number {
  const db = new Database(env().SWITCHBOARD_DB!, { readonly: true });
  try {
    return (db.query("SELECT count(*) AS n FROM pairing_codes").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function reply(from: typeof alice, text: string, contains: string): Promise<string> {
  telegram.incoming({ chat: privateChat(from), from, text });
  return (
    await telegram.waitForMessage(from.id, (m) => m.fromBot && m.visibleText.includes(contains), TIMEOUT)
  ).visibleText;
}

describe("pairing on Telegram", () => {
  let gateway: InProcessGateway | undefined;
  afterAll(async () => {
    await gateway?.stop();
  }, GATEWAY_STOP_TIMEOUT_MS);

  test("a code, the operator's approval, a restart, a revoke; a replayed update issues no second code", async () => {
    gateway = await start();
    // Listed ids still pass as before.
    await reply(alice, "hi from alice", "echo: hi from alice");

    // An unknown user in a DM gets a code and what to do with it; the model is never reached.
    const sent = telegram.incoming({ chat: privateChat(mallory), from: mallory, text: "hello?" });
    const first = (
      await telegram.waitForMessage(
        mallory.id,
        (m) => m.fromBot && m.visibleText.includes("pairing code is"),
        TIMEOUT,
      )
    ).visibleText;
    expect(first).toContain("switchboard access approve");
    const [code] = codesIn(mallory.id);
    expect(code).toMatch(/^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$/);
    expect(first).toContain(`switchboard access approve ${code}`);

    // The same update delivered again: no second code, no second reply.
    telegram.deliverAgain(sent.update.update_id);
    await telegram.waitForConfirmed(sent.update.update_id, TIMEOUT);
    await waitUntilSettled(env().SWITCHBOARD_DB!);
    expect(codesIn(mallory.id)).toEqual([code!]);
    expect(openCodeRows()).toBe(1);
    expect(botTexts(mallory.id).some((t) => t.startsWith("echo:"))).toBe(false);

    // A wrong code is refused and counted; nothing is granted.
    const wrong = await runCli(["access", "approve", "ZZZZZZZZ"], cliEnv());
    expect(wrong.exitCode).toBe(3);
    expect(wrong.stderr).toContain("wrong attempt 1 of 10");

    // The operator approves on the database file while the gateway runs.
    const grant = await runCliJson<{ channel: string; userId: string; userName: string | null }>(
      ["access", "approve", code!.toLowerCase()],
      cliEnv(),
    );
    expect(grant).toMatchObject({ channel: "telegram", userId: String(mallory.id), userName: "Mallory" });
    const twice = await runCli(["access", "approve", code!], cliEnv());
    expect(twice.exitCode).toBe(4);
    expect(twice.stderr).toContain("already approved");

    await reply(mallory, "now may I?", "echo: now may I?");

    // The grant is in the database: it survives a restart.
    await gateway.stop();
    gateway = await start();
    await reply(mallory, "after the restart", "echo: after the restart");
    const listed = await runCliJson<{ grants: Array<{ userId: string }> }>(["access", "list"], cliEnv());
    expect(listed.grants.map((g) => g.userId)).toEqual([String(mallory.id)]);

    // Revoked: the next message is refused (a pairing code again, never the model).
    const revoked = await runCli(["access", "revoke", "telegram", String(mallory.id)], cliEnv());
    expect(revoked.exitCode).toBe(0);
    const before = botTexts(mallory.id).length;
    await reply(mallory, "still there?", "pairing code is");
    await eventually(() => botTexts(mallory.id).length > before, TIMEOUT, "the refusal");
    expect(botTexts(mallory.id).some((t) => t.includes("echo: still there?"))).toBe(false);
    expect(codesIn(mallory.id)).toHaveLength(2);
    expect((await runCli(["access", "revoke", "telegram", String(mallory.id)], cliEnv())).exitCode).toBe(3);
  }, 120_000);

  test("under replayed updates a redemption happens once: two approvals of one code at once grant once, and the replayed request after approval does nothing", async () => {
    gateway ??= await start();
    const asked = telegram.incoming({ chat: privateChat(eve), from: eve, text: "let me in please" });
    await telegram.waitForMessage(
      eve.id,
      (m) => m.fromBot && m.visibleText.includes("pairing code is"),
      TIMEOUT,
    );
    const [code] = codesIn(eve.id);

    const both = await Promise.all([
      runCli(["access", "approve", code!], cliEnv()),
      runCli(["access", "approve", code!], cliEnv()),
    ]);
    expect(both.map((r) => r.exitCode).sort()).toEqual([0, 4]);
    expect(both.find((r) => r.exitCode === 4)!.stderr).toContain("already approved");
    const grants = await runCliJson<{ grants: Array<{ userId: string }> }>(["access", "list"], cliEnv());
    expect(grants.grants.filter((g) => g.userId === String(eve.id))).toHaveLength(1);

    // The update that asked for the code, delivered again after the approval: a duplicate. No
    // second code, no answer, and its text never reaches the model.
    const repliesBefore = botTexts(eve.id).length;
    telegram.deliverAgain(asked.update.update_id);
    await telegram.waitForConfirmed(asked.update.update_id, TIMEOUT);
    await reply(eve, "now in", "echo: now in");
    expect(botTexts(eve.id)).toHaveLength(repliesBefore + 1);
    expect(codesIn(eve.id)).toEqual([code!]);
    expect(fixture.llm.requestsContaining("let me in please")).toHaveLength(0);
  }, 90_000);
});
