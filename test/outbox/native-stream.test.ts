import { describe, expect, test } from "bun:test";
import type { NativeStream } from "../../channels/types.ts";
import { NativeStreamSession } from "../../outbox/native-stream.ts";
import { PlatformCallError, type PlatformCaller } from "../../outbox/platform-call.ts";

/** A stream that records its calls and shows what a platform would. */
function recordingStream(maxChars = 20) {
  const calls: string[] = [];
  let text = "";
  let streaming = false;
  const stream: NativeStream = {
    maxChars,
    start: async (markdown) => {
      calls.push(`start:${markdown}`);
      text = markdown;
      streaming = true;
      return { messageIds: ["m1"] };
    },
    append: async (id, markdown) => {
      calls.push(`append:${id}:${markdown}`);
      text += markdown;
    },
    stop: async (id, markdown) => {
      calls.push(`stop:${id}:${markdown}`);
      text += markdown;
      streaming = false;
    },
  };
  return { stream, calls, shown: () => ({ text, streaming }) };
}

const operations: string[] = [];
const call: PlatformCaller = async (operation, fn) => {
  operations.push(operation);
  try {
    return await fn();
  } catch (error) {
    throw new PlatformCallError(operation, error);
  }
};

describe("a native stream session", () => {
  test("grows by the new tail only, persists the message id once, and completes with the final tail", async () => {
    const { stream, calls, shown } = recordingStream();
    const started: string[][] = [];
    const session = new NativeStreamSession(stream, call, async (ids) => {
      started.push(ids);
    });
    operations.length = 0;
    await session.show("Hello");
    await session.show("Hello");
    await session.show("Hello, wor");
    expect(await session.end("Hello, world")).toBe(true);
    expect(calls).toEqual(["start:Hello", "append:m1:, wor", "stop:m1:ld"]);
    expect(started).toEqual([["m1"]]);
    expect(operations).toEqual(["send", "edit", "edit"]);
    expect(shown()).toEqual({ text: "Hello, world", streaming: false });
  });

  test("withdrawn text, an answer past the limit and blank text cannot be shown by appending", async () => {
    const { stream } = recordingStream(20);
    const session = new NativeStreamSession(stream, call, async () => {});
    await session.show("first try");
    expect(session.canShow("second")).toBe(false);
    expect(session.canShow("first try, and much more than twenty")).toBe(false);
    expect(session.canShow("   ")).toBe(false);
    expect(session.canShow("first try!")).toBe(true);
  });

  test("a final text that does not extend what is shown stops the stream as it is, for the caller to edit", async () => {
    const { stream, calls, shown } = recordingStream();
    const session = new NativeStreamSession(stream, call, async () => {});
    await session.show("draft");
    expect(await session.end("")).toBe(false);
    expect(calls).toEqual(["start:draft", "stop:m1:"]);
    expect(shown()).toEqual({ text: "draft", streaming: false });
    expect(session.messageIds).toEqual(["m1"]);
  });

  test("a session that never started has nothing to end", async () => {
    const { stream, calls } = recordingStream();
    const session = new NativeStreamSession(stream, call, async () => {});
    expect(await session.end("answer")).toBe(false);
    expect(calls).toEqual([]);
    expect(session.messageIds).toEqual([]);
  });
});
