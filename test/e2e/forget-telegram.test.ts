/**
 * /forget end to end on Telegram: the gateway composed in this process (a real process where a
 * SIGKILL or the operator API is the point), grammY against the Telegram emulator,
 * the fake model server, SQLite on a temp file read table by table after the purge; and an
 * operator's `conversations purge` through the running gateway's API. Nothing here depends on the
 * platform: this is the one end-to-end test of forgetting (Discord's buttons are covered by
 * approvals-discord.test.ts, which presses, forges and redelivers them).
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../../src/util/clock.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { runCli, runCliJson } from "./support/cli.ts";
import { conversationRows } from "./support/conversation-rows.ts";
import { slowAnswerRule, telegramDmSay, telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-forget-tg-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(3001, "Alice");
const bob = user(3002, "Bob");
const carol = user(3003, "Carol");
const dave = user(3004, "Dave");
const TOKEN = "operator-token-for-forget-tests";

const configFile = join(dir.path, "forget.json");
writeFileSync(
  configFile,
  JSON.stringify({
    version: 1,
    surfaces: { "telegram:dm": { inputPolicy: "queue", delivery: "terminal" } },
    models: { smart: "openai-compatible:smart-model" },
  }),
);
const env = () =>
  telegramGatewayEnv(fixture, {
    allowed: [alice.id, bob.id, carol.id, dave.id],
    extra: { SWITCHBOARD_CONFIG: configFile, SWITCHBOARD_OPERATOR_TOKEN: TOKEN },
  });
const dbPath = () => env().SWITCHBOARD_DB!;

const say = telegramDmSay(telegram);

const rowsOf = (conversationId: string) => conversationRows(dbPath(), conversationId);

/** Every text column of every row that names `conversationId`, joined (to look for content). */
function textOf(conversationId: string): string {
  const db = new Database(dbPath(), { readonly: true });
  try {
    const tables = Object.keys(rowsOf(conversationId));
    return tables
      .map((name) =>
        JSON.stringify(db.query(`SELECT * FROM ${name} WHERE conversation_id = ?`).all(conversationId)),
      )
      .join("\n");
  } finally {
    db.close();
  }
}

async function conversationOf(userId: number): Promise<string> {
  const list = await runCliJson<Array<{ id: string; key: string | null }>>(["conversations", "list"], {
    SWITCHBOARD_DB: dbPath(),
  });
  return list.find((c) => c.key?.includes(String(userId)))!.id;
}

describe("/forget on Telegram", () => {
  let running: InProcessGateway | undefined;
  beforeAll(async () => {
    running = await startInProcessGateway(env(), { clock: systemClock, limits: FAST_PACING });
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(() => running?.stop(), GATEWAY_STOP_TIMEOUT_MS);

  test("asks first; confirmed, every row of the conversation is gone (table by table) but its tombstone", async () => {
    await say(alice, "my secret is marmalade", "echo: my secret is marmalade");
    await say(alice, "/in 2h water the marmalade plants", "");
    await say(alice, "/model smart", "Model set to smart");
    const old = await conversationOf(alice.id);
    const before = rowsOf(old);
    for (const table of ["messages", "runs", "events", "ingress_receipts", "outbox", "schedules"])
      expect({ table, some: (before[table] ?? 0) > 0 }).toEqual({ table, some: true });

    const asked = await say(alice, "/forget", "Send /forget confirm");
    expect(asked).toContain("deletes this conversation for good");
    const asking = rowsOf(old);
    expect(asking.runs).toBe(before.runs!);

    await say(alice, "/forget confirm", "Done: I deleted this conversation");
    const after = rowsOf(old);
    for (const [table, rows] of Object.entries(after)) {
      const expected =
        table === "conversation_tombstones" ? 1 : table === "outbox" ? (asking.outbox ?? 0) : 0;
      expect({ table, rows }).toEqual({ table, rows: expected });
    }
    expect(textOf(old)).not.toContain("marmalade");
    const db = new Database(dbPath(), { readonly: true });
    const tomb = db.query("SELECT * FROM conversation_tombstones WHERE conversation_id = ?").get(old);
    db.close();
    expect(tomb).toMatchObject({ conversation_id: old, purged_by: `user:telegram:${alice.id}` });

    // The next message starts a fresh conversation that knows nothing of the old one.
    await say(alice, "what was my secret", "echo: what was my secret");
    const request = llm.requestsContaining("what was my secret")[0]!;
    expect(JSON.stringify(request.messages)).not.toContain("marmalade");
    expect(request.model).toBe("test-model");
    expect(await conversationOf(alice.id)).not.toBe(old);
  }, 90_000);

  test("/forget asks with buttons: a forged press is refused, Keep it keeps, Delete it purges once (its redelivery does nothing more), and the old keyboard is then out of date", async () => {
    await say(carol, "my pin is 4321", "echo: my pin is 4321");
    const old = await conversationOf(carol.id);
    const ask = async (n: number) => {
      telegram.incoming({ chat: privateChat(carol), from: carol, text: "/forget" });
      return await eventually(
        () => {
          const prompts = telegram
            .messages(carol.id)
            .filter((m) => m.fromBot && m.visibleText.includes("Send /forget confirm") && !!m.buttons);
          return prompts.length >= n ? prompts[n - 1] : undefined;
        },
        20_000,
        `forget prompt ${n} with buttons`,
      );
    };
    const answerFor = (queryId: string) =>
      eventually(
        () => telegram.callbackAnswers().find((a) => a.id === queryId)?.text,
        20_000,
        `the answer to callback query ${queryId}`,
      );

    const first = await ask(1);
    expect(first.buttons?.flat().map((b) => b.text)).toEqual(["Delete it", "Keep it"]);
    const deleteData = first.buttons!.flat().find((b) => b.text === "Delete it")!.callbackData;

    // Forged: altered data, or the button's data pressed by someone it was not made for.
    const forged = `${deleteData.slice(0, -1)}${deleteData.endsWith("A") ? "B" : "A"}`;
    const altered = telegram.press(carol.id, first.messageId, carol, { forgedData: forged });
    expect(await answerFor(altered.queryId)).toBe("This button is not valid.");
    const byAlice = telegram.press(carol.id, first.messageId, alice, { forgedData: deleteData });
    expect(await answerFor(byAlice.queryId)).toBe("This button is not valid.");
    expect(rowsOf(old).runs).toBeGreaterThan(0);

    const keep = telegram.press(carol.id, first.messageId, carol, { label: "Keep it" });
    expect(await answerFor(keep.queryId)).toBe("Kept.");
    await telegram.waitForMessage(
      carol.id,
      (m) => m.fromBot && m.visibleText.includes("Kept: nothing was deleted"),
      20_000,
    );
    expect(rowsOf(old).runs).toBeGreaterThan(0);

    const second = await ask(2);
    const press = telegram.press(carol.id, second.messageId, carol, { label: "Delete it" });
    expect(await answerFor(press.queryId)).toBe("Deleted.");
    await telegram.waitForMessage(
      carol.id,
      (m) => m.fromBot && m.visibleText.includes("Done: I deleted"),
      20_000,
    );
    const after = rowsOf(old);
    expect(after.runs).toBe(0);
    expect(after.conversation_tombstones).toBe(1);
    expect(textOf(old)).not.toContain("4321");

    // A fresh conversation, then the same press redelivered: nothing more is deleted or said.
    await say(carol, "a new start", "echo: a new start");
    const fresh = await conversationOf(carol.id);
    expect(fresh).not.toBe(old);
    const freshRuns = rowsOf(fresh).runs;
    telegram.deliverAgain(press.update.update_id);
    await telegram.waitForConfirmed(press.update.update_id, 20_000);
    // The old keyboard pressed again (a new press): out of date, and the fresh conversation stays.
    const stale = telegram.press(carol.id, first.messageId, carol, { label: "Delete it" });
    expect(await answerFor(stale.queryId)).toContain("This button is out of date");
    expect(rowsOf(fresh).runs).toBe(freshRuns);
    expect(await conversationOf(carol.id)).toBe(fresh);
    const done = telegram
      .messages(carol.id)
      .filter((m) => m.fromBot && m.visibleText.includes("Done: I deleted"));
    expect(done).toHaveLength(1);
  }, 120_000);
});

describe("/forget on Telegram, in a process: a SIGKILL, the operator API", () => {
  const gateway = fixture.gatewayAroundTests(env);

  test("/forget confirm while an answer is being written: it is interrupted and purged; a message sent right after is answered in the fresh conversation", async () => {
    llm.addRules([slowAnswerRule("tell me a long tale", "a very long tale indeed with many words", 40, 400)]);
    telegram.incoming({ chat: privateChat(bob), from: bob, text: "tell me a long tale" });
    await eventually(
      () => llm.requestsContaining("tell me a long tale").length === 1,
      15_000,
      "the slow call",
    );
    const old = await conversationOf(bob.id);

    telegram.incoming({ chat: privateChat(bob), from: bob, text: "/forget confirm" });
    telegram.incoming({ chat: privateChat(bob), from: bob, text: "right after forgetting" });
    await telegram.waitForMessage(
      bob.id,
      (m) => m.fromBot && m.visibleText.includes("Done: I deleted"),
      20_000,
    );
    await telegram.waitForMessage(
      bob.id,
      (m) => m.fromBot && m.visibleText.includes("echo: right after forgetting"),
      20_000,
    );
    const after = rowsOf(old);
    expect(after.runs).toBe(0);
    expect(after.messages).toBe(0);
    expect(after.conversation_tombstones).toBe(1);
    expect(textOf(old)).not.toContain("long tale");
    const request = llm.requestsContaining("right after forgetting")[0]!;
    expect(JSON.stringify(request.messages)).not.toContain("tell me a long tale");
    // The tale was never delivered.
    expect(telegram.messages(bob.id).some((m) => m.fromBot && m.visibleText.includes("very long tale"))).toBe(
      false,
    );

    // After a SIGKILL and restart nothing of the purged conversation reappears.
    await gateway.crashAndRestart();
    await say(bob, "still fresh", "echo: still fresh");
    expect(rowsOf(old).runs).toBe(0);
    expect(textOf(old)).not.toContain("long tale");
  }, 120_000);

  test("an operator purges through the API while an answer is written: interrupted, purged, audited", async () => {
    llm.addRules([slowAnswerRule("a slow saga", "the saga goes on and on and on", 40, 400)]);
    telegram.incoming({ chat: privateChat(dave), from: dave, text: "a slow saga" });
    await eventually(() => llm.requestsContaining("a slow saga").length === 1, 15_000, "the slow call");
    const old = await conversationOf(dave.id);
    const cliEnv = { SWITCHBOARD_URL: gateway.process.url, SWITCHBOARD_OPERATOR_TOKEN: TOKEN };

    const purged = await runCliJson<{ outcome: string; purgedBy: string; conversationId: string }>(
      ["conversations", "purge", old, "--actor", "carol"],
      cliEnv,
    );
    expect(purged).toMatchObject({ outcome: "purged", purgedBy: "operator:carol", conversationId: old });
    expect(rowsOf(old).runs).toBe(0);
    expect(rowsOf(old).messages).toBe(0);

    const again = await runCliJson<{ outcome: string; purgedBy: string }>(
      ["conversations", "purge", old],
      cliEnv,
    );
    expect(again).toMatchObject({ outcome: "already_purged", purgedBy: "operator:carol" });
    const unknown = await runCli(["conversations", "purge", "conv_nope"], cliEnv);
    expect(unknown.exitCode).toBe(3);

    await say(dave, "hello again", "echo: hello again");
    expect(JSON.stringify(llm.requestsContaining("hello again")[0]!.messages)).not.toContain("slow saga");
    expect(
      telegram.messages(dave.id).some((m) => m.fromBot && m.visibleText.includes("the saga goes on")),
    ).toBe(false);
  }, 90_000);
});
