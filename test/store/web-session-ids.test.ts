/**
 * The "web-session-ids" data migration (src/store/web-session-ids.ts), on both engines. Rows are
 * seeded as the web chat wrote them before issue 38 (the session id in the conversation key, the
 * principal `web:<id>`, the ingress key, the reply target, the approval's decider, a budget
 * override), through the store's own write paths so every trigger-kept table (usage, principals,
 * the operator's lookup) has its copy too. After the migration no table holds a session id, in any
 * case; a failing migration changes nothing; a second one does nothing; and the browser that comes
 * back with the same session id finds the same conversation, its transcript and its dedupe keys.
 */
import { Database } from "bun:sqlite";
import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { InboundMessage } from "../../channels/types.ts";
import { conversationKeyFor } from "../../channels/web/inbound.ts";
import { createWebChannel } from "../../channels/web/index.ts";
import { webUserIds } from "../../channels/web/user-id.ts";
import { webHistoryLoader } from "../../src/gateway/web-history.ts";
import type { StoreBackend } from "../../src/store/backend.ts";
import { openPostgresBackend } from "../../src/store/postgres/backend.ts";
import { openSqliteBackend } from "../../src/store/sqlite/backend.ts";
import { SessionIdRewriter } from "../../src/store/web-session-ids.ts";
import { createDatabase, queryDatabase } from "../support/postgres.ts";
import { useTestServer } from "../support/postgres-hooks.ts";
import { tempDir } from "../support/runtime.ts";

useTestServer();

const T0 = 1_800_000_000_000;
const KEY = "web-user-id-key-for-tests-0123456789";
const userIdOf = webUserIds(KEY);
/** As the page made them (24 random bytes, base64url): mixed case, so lower-cased copies are told apart. */
const ALICE = "AliceSessionQz3Xk9Lm2Np4Rs6Tv8Wy0Ab";
const BOB = "BobSession_Hj7Kd2Mf9Qx4Zr1Ws6Ne3Uo";
const TIMEOUT_MS = 60_000;

interface Engine {
  backend: StoreBackend;
  /** Every row of every table, as text. */
  dump(): Promise<string>;
  /** The bytes the database keeps on disk, as text (SQLite only; "" elsewhere). */
  fileBytes(): Promise<string>;
  reopen(): Promise<StoreBackend>;
  close(): Promise<void>;
}

async function sqliteEngine(): Promise<Engine> {
  const dir = tempDir("switchboard-web-ids-");
  const file = join(dir.path, "gateway.sqlite");
  const engine: Engine = {
    backend: openSqliteBackend(file),
    async dump() {
      const db = new Database(file, { readonly: true });
      try {
        const tables = db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{
          name: string;
        }>;
        return tables
          .map(({ name }) => {
            const rows = db.query(`SELECT * FROM "${name}"`).all() as Array<Record<string, unknown>>;
            return `${name}: ${rows.map((row) => Object.values(row).map(asText).join(" | ")).join("\n")}`;
          })
          .join("\n");
      } finally {
        db.close();
      }
    },
    async fileBytes() {
      return readdirSync(dir.path)
        .filter((name) => name.startsWith("gateway.sqlite"))
        .map((name) => readFileSync(join(dir.path, name), "latin1"))
        .join("\n");
    },
    async reopen() {
      await engine.backend.close();
      engine.backend = openSqliteBackend(file);
      return engine.backend;
    },
    async close() {
      await engine.backend.close();
      dir.cleanup();
    },
  };
  return engine;
}

async function postgresEngine(): Promise<Engine> {
  const db = await createDatabase();
  const engine: Engine = {
    backend: await openPostgresBackend(db.url),
    async dump() {
      const tables = await queryDatabase<{ name: string }>(
        db.url,
        "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()",
      );
      const parts: string[] = [];
      for (const { name } of tables) {
        const rows = await queryDatabase<{ row: string }>(
          db.url,
          `SELECT t::text AS row FROM "${name}" AS t`,
        );
        parts.push(`${name}: ${rows.map((r) => r.row).join("\n")}`);
      }
      return parts.join("\n");
    },
    fileBytes: async () => "",
    async reopen() {
      await engine.backend.close();
      engine.backend = await openPostgresBackend(db.url);
      return engine.backend;
    },
    async close() {
      await engine.backend.close();
      await db.drop();
    },
  };
  return engine;
}

function asText(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString("latin1");
  return String(value);
}

/** The InboundMessage the web chat made before issue 38, for `sessionId`. */
function oldInbound(sessionId: string, clientMessageId: string, text: string): InboundMessage {
  return {
    channel: "web",
    account: "local",
    updateKey: `${sessionId}:${clientMessageId}`,
    principal: { id: `web:${sessionId}`, isBot: false },
    conversationKey: `web:local:dm:${sessionId}`,
    replyTarget: sessionId,
    surface: "dm",
    text,
    messageId: clientMessageId,
    addressedToBot: true,
    attachments: [],
    receivedAtMs: T0,
  };
}

function oldContext(sessionId: string) {
  return {
    channel: "web",
    account: "local",
    target: sessionId,
    surface: "dm",
    delivery: "terminal",
    conversationKey: `web:local:dm:${sessionId}`,
    principal: { id: `web:${sessionId}` },
    origin: "user",
  };
}

let counter = 0;

/**
 * One exchange as the old gateway stored it: the input (receipt, message, run), the answer sent
 * and delivered to the session, with usage; with `approval`, the run first asked for a tool
 * approval that the user then granted.
 */
async function oldExchange(
  backend: StoreBackend,
  sessionId: string,
  clientMessageId: string,
  text: string,
  answer: string,
): Promise<string> {
  counter += 1;
  const nowMs = T0 + counter * 1000;
  const message = oldInbound(sessionId, clientMessageId, text);
  const admitted = await backend.runtime.admit({
    conversation: { key: message.conversationKey },
    idempotencyKey: `web:local:${message.updateKey}`,
    fingerprint: `fp-${clientMessageId}`,
    parts: [{ type: "text", text }],
    context: oldContext(sessionId),
    policy: "queue",
    coalescePending: false,
    ingress: {
      source: "web:local",
      key: message.updateKey,
      payload: { ...message, receivedAtMs: nowMs },
      strict: true,
    },
    proposedIds: { runId: `run-${counter}`, messageId: `msg-${counter}` },
    nowMs,
  });
  if (admitted.outcome === "duplicate") throw new Error("seeded twice");
  const acquired = await backend.runtime.acquireRun({
    runId: admitted.runId,
    owner: "w",
    nowMs,
    leaseMs: 60_000,
  });
  if (!acquired) throw new Error("could not acquire the seeded run");
  const step = {
    step: 0,
    model: "m",
    finishReason: "stop",
    usage: { inputTokens: 300, outputTokens: 50 },
    startedAtMs: nowMs,
    finishedAtMs: nowMs,
  };
  const approvalId = `ap_${String(counter).padStart(12, "0")}`;
  await backend.runtime.commitTerminal({
    fence: acquired.fence,
    state: "awaiting_approval",
    assistantParts: [{ type: "text", text: "Approval needed" }],
    approvals: [
      {
        id: approvalId,
        toolCallId: `call-${counter}`,
        toolName: "notes_append_note",
        input: { text },
        binding: "b",
        expiresAtMs: nowMs + 3_600_000,
      },
    ],
    delivery: {
      runId: admitted.runId,
      conversationId: admitted.conversationId,
      channel: "web",
      account: "local",
      target: sessionId,
      state: "awaiting_approval",
      text: "Approval needed",
    },
    finalStep: { step, parts: [{ type: "text", text: "Approval needed" }] },
    nowMs,
  });
  // The press: the decision, by the principal id the old web chat gave its users.
  const decided = await backend.runtime.admit({
    conversation: { id: admitted.conversationId },
    idempotencyKey: `approval:${approvalId}`,
    fingerprint: `fp-${approvalId}`,
    parts: [
      {
        type: "tool-approval-response",
        approvalId,
        toolCallId: `call-${counter}`,
        toolName: "notes_append_note",
        input: { text },
        approved: true,
        decidedBy: `web:${sessionId}`,
        binding: "b",
      },
    ],
    context: oldContext(sessionId),
    policy: "queue",
    coalescePending: false,
    approval: { approvalId, state: "approved", decidedBy: `web:${sessionId}` },
    proposedIds: { runId: `run-${counter}b`, messageId: `msg-${counter}b` },
    nowMs: nowMs + 1,
  });
  const second = await backend.runtime.acquireRun({
    runId: decided.runId,
    owner: "w",
    nowMs: nowMs + 2,
    leaseMs: 60_000,
  });
  if (!second) throw new Error("could not acquire the successor run");
  await backend.runtime.commitTerminal({
    fence: second.fence,
    state: "completed",
    assistantParts: [{ type: "text", text: answer }],
    delivery: {
      runId: decided.runId,
      conversationId: admitted.conversationId,
      channel: "web",
      account: "local",
      target: sessionId,
      state: "completed",
      text: answer,
    },
    finalStep: {
      step: { ...step, startedAtMs: nowMs + 2, finishedAtMs: nowMs + 2 },
      parts: [{ type: "text", text: answer }],
    },
    nowMs: nowMs + 2,
  });
  // Delivered, as the web channel answered: each record with the message id it was shown as.
  const records = await backend.outbox.list({ conversationId: admitted.conversationId, limit: 50 });
  for (const record of records.reverse()) {
    expect(await backend.outbox.markSending(record.id, nowMs + 3)).not.toBeNull();
    expect(
      await backend.outbox.markDelivered(record.id, { messageIds: [`web-${record.id}`] }, nowMs + 3),
    ).toBe(true);
  }
  return admitted.conversationId;
}

/** A Telegram conversation beside them, which the migration must leave as it is. */
async function telegramExchange(backend: StoreBackend): Promise<void> {
  await backend.runtime.admit({
    conversation: { key: "telegram:bot:dm:1001" },
    idempotencyKey: "telegram:bot:77",
    fingerprint: "fp-tg",
    parts: [{ type: "text", text: "hello from telegram" }],
    context: {
      ...oldContext("x"),
      channel: "telegram",
      account: "bot",
      target: "1001",
      principal: { id: "1001" },
    },
    policy: "queue",
    coalescePending: false,
    ingress: { source: "telegram:bot", key: "77", payload: { text: "hello from telegram" } },
    proposedIds: { runId: "run-tg", messageId: "msg-tg" },
    nowMs: T0,
  });
}

const holds = (text: string, sessionId: string) => text.toLowerCase().includes(sessionId.toLowerCase());

/** The first event of the stream a page with `sessionId` opens: its transcript. */
async function transcriptOf(backend: StoreBackend, sessionId: string): Promise<string[]> {
  const web = createWebChannel({ userIdKey: KEY, history: webHistoryLoader(backend, 200) });
  const stream = web.routes().find((r) => r.path === "/web/api/stream")!;
  const abort = new AbortController();
  const response = await stream.handle(
    new Request("http://127.0.0.1/web/api/stream", {
      headers: { "x-switchboard-session": sessionId },
      signal: abort.signal,
    }),
  );
  const reader = response.body!.getReader();
  let text = "";
  while (!/^data: .*\n\n/m.test(text)) text += new TextDecoder().decode((await reader.read()).value);
  abort.abort();
  const event = JSON.parse(/^data: (.*)$/m.exec(text)![1]!) as { messages: Array<{ text: string }> };
  return event.messages.map((m) => m.text);
}

for (const [name, open] of [
  ["sqlite", sqliteEngine],
  ["postgres", postgresEngine],
] as const) {
  describe(`web session ids migration (${name})`, () => {
    let engine: Engine | null = null;
    afterEach(async () => {
      await engine?.close();
      engine = null;
    });

    test(
      "rewrites every stored session id to the derived user id, once, atomically; the conversation continues",
      async () => {
        engine = await open();
        const alice = await oldExchange(
          engine.backend,
          ALICE,
          "message-0001",
          "remember eggs",
          "Noted eggs.",
        );
        await oldExchange(engine.backend, BOB, "message-0001", "remember milk", "Noted milk.");
        await telegramExchange(engine.backend);
        await engine.backend.budgets.changeOverride(
          `user:web:web:${ALICE}`,
          { limits: { tokensPerDay: 5000 } },
          "operator",
          T0,
        );
        const before = await engine.dump();
        // The seed is what the old code wrote, doubled prefix and lower-cased search terms included.
        expect(holds(before, ALICE) && holds(before, BOB)).toBe(true);
        expect(before).toContain(`web:web:${ALICE}`);
        // (`web:web:local:dm:…` is a room key: the channel before the conversation key, as for every channel.)
        expect(before).toContain(ALICE.toLowerCase());
        if (name === "sqlite") expect(holds(await engine.fileBytes(), ALICE)).toBe(true);

        // A migration that fails half-way changes nothing and records nothing.
        let calls = 0;
        const failing = (sessionId: string) => {
          if (++calls === 2) throw new Error("key unavailable");
          return userIdOf(sessionId);
        };
        await expect(engine.backend.migrateWebSessionIds(failing, T0)).rejects.toThrow("key unavailable");
        expect(await engine.dump()).toBe(before);

        const result = await engine.backend.migrateWebSessionIds(userIdOf, T0);
        expect(result?.sessions).toBe(2);
        expect(result?.rows).toBeGreaterThan(10);
        const after = await engine.dump();
        const a = userIdOf(ALICE);
        expect({
          alice: holds(after, ALICE),
          bob: holds(after, BOB),
          doubled: /web:web:(?!local:)/.test(after),
        }).toEqual({
          alice: false,
          bob: false,
          doubled: false,
        });
        // Where the old code had the session id, the user id now is, as the new code writes it.
        for (const expected of [
          `web:local:dm:${a}`,
          `web:${a}`,
          `user:web:${a}`,
          `${a}:message-0001`,
          `web:local:dm:${a}`.toLowerCase(),
          "telegram:bot:dm:1001",
          "telegram:1001",
        ])
          expect(after).toContain(expected);
        const approvals = await engine.backend.runtime.listApprovals({ conversationId: alice });
        expect(approvals.map((ap) => ap.decidedBy)).toEqual([a]);
        expect((await engine.backend.budgets.override(`user:web:${a}`))?.limits).toEqual({
          tokensPerDay: 5000,
        });
        expect((await engine.backend.budgets.usageBy("user", 0, 10)).map((u) => u.key).sort()).toEqual(
          [`web:${a}`, `web:${userIdOf(BOB)}`].sort(),
        );

        // Once: a second run (a restart) changes nothing.
        expect(await engine.backend.migrateWebSessionIds(userIdOf, T0 + 1)).toBeNull();
        expect(await engine.dump()).toBe(after);
        // No old copy left in the file either (pages zeroed, WAL truncated).
        await engine.reopen();
        expect(holds(await engine.fileBytes(), ALICE)).toBe(false);

        // Alice comes back with the same session id: the same conversation, its transcript, its keys.
        expect(await engine.backend.runtime.resolveConversationKey(conversationKeyFor(a), T0 + 2)).toBe(
          alice,
        );
        const shown = await transcriptOf(engine.backend, ALICE);
        expect(shown).toEqual(expect.arrayContaining(["remember eggs", "Approval needed", "Noted eggs."]));
        expect(shown.join(" ")).not.toContain("milk");
        const claimed = await engine.backend.runtime.claimIngress({
          source: "web:local",
          key: `${a}:message-0001`,
          outcome: "admitted",
          payload: {},
          conversationId: alice,
          nowMs: T0 + 3,
        });
        expect(claimed.fresh).toBe(false);
        // The derived id, sent as a session id, is another (empty) session.
        expect(await transcriptOf(engine.backend, a)).toEqual([]);
      },
      TIMEOUT_MS,
    );
  });
}

test("the rewriter: whole ids only, the old principal loses its prefix, lower-cased copies stay lower-cased", () => {
  const r = new SessionIdRewriter(new Map([[ALICE, "U".repeat(22)]]));
  const u = "U".repeat(22);
  expect(r.rewrite(`web:local:dm:${ALICE}`)).toBe(`web:local:dm:${u}`);
  expect(r.rewrite(`web:web:${ALICE}`)).toBe(`web:${u}`);
  expect(r.rewrite(`{"principal":{"id":"web:${ALICE}"},"target":"${ALICE}"}`)).toBe(
    `{"principal":{"id":"${u}"},"target":"${u}"}`,
  );
  expect(r.rewrite(`web:local:${ALICE}:message-0001`)).toBe(`web:local:${u}:message-0001`);
  expect(r.rewrite(`web:${ALICE.toLowerCase()}`, true)).toBe(u.toLowerCase());
  expect(r.rewrite(`x${ALICE}`)).toBeNull();
  expect(r.rewrite("nothing here at all, not even one id")).toBeNull();
});
