import { describe, expect, test } from "bun:test";
import { stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { createOfflineModel, offlineReply } from "../../src/models/offline.ts";
import { toUsage } from "../../src/models/usage.ts";

async function collectStream(fullStream: AsyncIterable<{ type: string; text?: string }>) {
  const deltas: string[] = [];
  const types: string[] = [];
  for await (const part of fullStream) {
    types.push(part.type);
    if (part.type === "text-delta" && part.text !== undefined) deltas.push(part.text);
  }
  return { deltas, types };
}

describe("offline model through streamText", () => {
  test("streams a plain offline notice quoting the user's text, in several deltas", async () => {
    const result = streamText({
      model: createOfflineModel(),
      messages: [
        { role: "user", content: "an earlier question" },
        { role: "assistant", content: "an earlier answer" },
        { role: "user", content: "  What is the capital of France?  " },
      ],
      tools: { lookup: tool({ inputSchema: z.object({ q: z.string() }), execute: async () => "unused" }) },
      stopWhen: stepCountIs(1),
    });
    const { deltas, types } = await collectStream(result.fullStream);

    const text = deltas.join("");
    expect(deltas.length).toBeGreaterThanOrEqual(4);
    expect(text).toBe(
      "I'm running in offline mode: no model is configured, so I can't really answer. " +
        'You said: "What is the capital of France?". Set OPENROUTER_API_KEY (or SWITCHBOARD_MODEL) to ' +
        "connect a real model.",
    );
    expect(types).not.toContain("tool-call");
    expect(await result.finishReason).toBe("stop");
    expect(toUsage(await result.usage, await result.providerMetadata)).toEqual({});
    expect((await result.response).modelId).toBe("offline");
  });

  test("quotes at most 200 characters of a long input", () => {
    const reply = offlineReply(`${"a".repeat(250)}`);
    expect(reply).toContain(`You said: "${"a".repeat(200)}…".`);
    expect(reply).not.toContain("a".repeat(201));
    expect(offlineReply("")).toContain("You sent no text.");
  });

  test("stops streaming when the abort signal fires", async () => {
    const controller = new AbortController();
    const result = streamText({
      model: createOfflineModel({ deltaDelayMs: 30 }),
      messages: [{ role: "user", content: "hello" }],
      stopWhen: stepCountIs(1),
      abortSignal: controller.signal,
    });
    const deltas: string[] = [];
    const types: string[] = [];
    const startedMs = Date.now();
    for await (const part of result.fullStream) {
      types.push(part.type);
      if (part.type === "text-delta") {
        deltas.push(part.text);
        if (deltas.length === 1) controller.abort(new Error("user sent a newer message"));
      }
    }
    expect(deltas).toHaveLength(1);
    expect(types).toContain("abort");
    expect(types).not.toContain("finish");
    expect(Date.now() - startedMs).toBeLessThan(1_000);
  }, 5_000);

  test("errors its own stream with the abort reason between deltas", async () => {
    const controller = new AbortController();
    const model = createOfflineModel({ deltaDelayMs: 20 });
    const { stream } = await model.doStream({
      prompt: [{ role: "user", content: [{ type: "text", text: "hello" }] }],
      abortSignal: controller.signal,
    });
    const reader = stream.getReader();
    let read = await reader.read();
    while (!read.done && read.value.type !== "text-delta") read = await reader.read();
    expect(read.value?.type).toBe("text-delta");

    const reason = new Error("superseded");
    controller.abort(reason);
    await expect(reader.read()).rejects.toBe(reason);
  }, 5_000);

  test("rejects a call whose signal is already aborted, without streaming", async () => {
    const model = createOfflineModel();
    const signal = AbortSignal.abort(new Error("gone"));
    await expect(
      Promise.resolve(
        model.doStream({
          prompt: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
          abortSignal: signal,
        }),
      ),
    ).rejects.toThrow("gone");
  });
});
