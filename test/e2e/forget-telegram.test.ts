/**
 * /forget end to end on Telegram: a real gateway process, grammY against the Telegram emulator,
 * the fake model server, SQLite on a temp file read table by table after the purge.
 */

import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { runCliJson } from "./support/cli.ts";
import { conversationRows } from "./support/conversation-rows.ts";
import { slowAnswerRule, telegramDmSay, telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const fixture = useE2eFixture("switchboard-e2e-forget-tg-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(3001, "Alice");
const bob = user(3002, "Bob");

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
  telegramGatewayEnv(fixture, { allowed: [alice.id, bob.id], extra: { SWITCHBOARD_CONFIG: configFile } });
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
  const gateway = fixture.gatewayAroundTests(env);

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

  test("/forget confirm while an answer is being written: it is interrupted and purged; a message sent right after is answered in the fresh conversation", async () => {
    llm.addRules([slowAnswerRule("tell me a long tale", "a very long tale indeed with many words", 10, 400)]);
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
});
