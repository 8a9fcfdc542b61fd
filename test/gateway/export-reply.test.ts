import { describe, expect, test } from "bun:test";
import { EXPORT_MAX_CHARS, exportReply, exportText } from "../../src/gateway/export-reply.ts";
import type { ConversationExport } from "../../src/operator/export.ts";

const LIMITS = { maxFileBytes: 50 * 1024 * 1024, maxCaptionChars: 1024 };

function conversation(texts: Array<[role: "user" | "assistant", text: string, runState?: string]>) {
  return {
    header: {
      type: "switchboard-export",
      version: 1,
      conversationId: "conv_abc",
      exportedAtMs: Date.UTC(2026, 11, 2, 9, 30),
    },
    messages: texts.map(([role, text, runState], index) => ({
      type: "message",
      order: index + 1,
      runState: runState ?? "completed",
      id: `msg_${index}`,
      runId: `run_${Math.floor(index / 2)}`,
      role,
      parts: [{ type: "text", text }],
      status: "committed",
      createdAtMs: Date.UTC(2026, 11, 2, 9, index),
    })),
    runs: [],
    schedules: [],
    outbox: [],
  } as unknown as ConversationExport;
}

describe("/export reply", () => {
  test("a channel that takes files gets the whole transcript as a Markdown file with a short caption", () => {
    const long = "word ".repeat(5_000);
    const reply = exportReply(
      conversation([
        ["user", "what is marmalade?"],
        ["assistant", long],
        ["user", "dropped", "superseded"],
      ]),
      LIMITS,
    );
    if (reply.kind !== "file") throw new Error(`expected a file, got ${reply.kind}`);
    expect(reply.filename).toBe("conversation-conv_abc.md");
    expect(reply.mimeType).toBe("text/markdown");
    expect(reply.caption).toBe("This conversation as Markdown: 2 messages, exported 2026-12-02 09:30 UTC.");
    const markdown = new TextDecoder().decode(reply.bytes);
    expect(markdown).toStartWith("# Conversation conv_abc\n");
    expect(markdown).toContain("what is marmalade?");
    expect(markdown).toContain(long.trim());
    expect(markdown).not.toContain("dropped");
    expect(markdown).not.toContain("cut here");
    expect(reply.bytes.byteLength).toBeGreaterThan(EXPORT_MAX_CHARS);
  });

  test("a channel without files (the web chat) gets a message cut to a readable length", () => {
    const reply = exportReply(
      conversation([
        ["user", "hello"],
        ["assistant", "x".repeat(EXPORT_MAX_CHARS)],
      ]),
      undefined,
    );
    if (reply.kind !== "text") throw new Error("expected text");
    expect(reply.text).toContain("hello");
    expect(reply.text).toContain("switchboard conversations export conv_abc");
    expect(reply.text.length).toBeLessThan(EXPORT_MAX_CHARS + 200);
  });

  test("a transcript over the channel's file limit goes as a cut message instead", () => {
    const exported = conversation([["user", "y".repeat(3_000)]]);
    expect(exportReply(exported, { ...LIMITS, maxFileBytes: 2_000 })).toEqual({
      kind: "text",
      text: exportText(exported),
    });
    expect(exportReply(exported, { ...LIMITS, maxFileBytes: 4_000 }).kind).toBe("file");
  });

  test("nothing to export: a sentence, never an empty file", () => {
    const empty = conversation([["user", "gone", "absorbed"]]);
    expect(exportReply(empty, LIMITS)).toEqual({
      kind: "text",
      text: "This conversation has no messages yet.",
    });
    expect(exportReply(conversation([]), undefined)).toEqual({
      kind: "text",
      text: "This conversation has no messages yet.",
    });
  });
});
