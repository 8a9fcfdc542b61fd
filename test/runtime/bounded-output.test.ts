import { expect, test } from "bun:test";
import { asSchema, type ModelMessage } from "ai";
import {
  boundOutput,
  createReadOutputTool,
  HEAD_CHARS,
  OUTPUT_LIMIT_BYTES,
  showsCutOutput,
} from "../../src/runtime/bounded-output.ts";
import type { RuntimeStore } from "../../src/runtime/store.ts";

test("a result within 16 KB is passed as is, whatever its type", () => {
  const text = "x".repeat(OUTPUT_LIMIT_BYTES);
  expect(boundOutput(text, "out_1")).toEqual({ output: text, spilled: null });
  const object = { rows: [1, 2, 3] };
  expect(boundOutput(object, "out_1")).toEqual({ output: object, spilled: null });
});

test("a larger result is cut to its head with the reference and where to read on; the full text is kept", () => {
  // 16 KB of characters but more bytes: the limit is in bytes.
  const text = "é".repeat(OUTPUT_LIMIT_BYTES);
  const bounded = boundOutput(text, "out_7");
  expect(bounded.spilled).toEqual({ ref: "out_7", text });
  expect(typeof bounded.output).toBe("string");
  const output = bounded.output as string;
  expect(output.startsWith("é".repeat(HEAD_CHARS))).toBe(true);
  expect(output).toContain(`of ${OUTPUT_LIMIT_BYTES}`);
  expect(output).toContain('call read_output with {"ref": "out_7", "offset": 4000}');
  expect(Buffer.byteLength(output)).toBeLessThan(OUTPUT_LIMIT_BYTES);
});

test("a large structured result is kept as its JSON; an astral character is never split; NUL is replaced", () => {
  const rows = Array.from({ length: 3000 }, (_, i) => ({ i, name: `row ${i}` }));
  expect(boundOutput(rows, "r").spilled?.text).toBe(JSON.stringify(rows));
  const astral = `${"a".repeat(HEAD_CHARS - 1)}🙂\u0000${"b".repeat(20_000)}`;
  const bounded = boundOutput(astral, "r");
  expect((bounded.output as string).startsWith(`${"a".repeat(HEAD_CHARS - 1)}🙂\n`)).toBe(true);
  expect(bounded.spilled?.text.includes("\u0000")).toBe(false);
  expect(bounded.spilled?.text).toContain("🙂\uFFFD");
});

test("read_output's description and schema are Latin-1, so a request with a photo stays an 8-bit string", () => {
  const tool = createReadOutputTool({} as RuntimeStore, "c1");
  const text = JSON.stringify({
    description: tool.description,
    schema: asSchema(tool.inputSchema).jsonSchema,
  });
  expect(text).toContain("out_");
  expect(Math.max(...[...text].map((c) => c.codePointAt(0) ?? 0))).toBeLessThanOrEqual(0xff);
});

test("read_output is called for only by a cut output among the prompt's tool results", () => {
  const toolMessage = (value: string): ModelMessage => ({
    role: "tool",
    content: [{ type: "tool-result", toolCallId: "c1", toolName: "fetch", output: { type: "text", value } }],
  });
  const cut = boundOutput("x".repeat(OUTPUT_LIMIT_BYTES + 1), "out_9").output as string;
  const user: ModelMessage = { role: "user", content: "hello" };
  expect(showsCutOutput([user])).toBe(false);
  expect(showsCutOutput([user, toolMessage("a short result")])).toBe(false);
  expect(showsCutOutput([user, toolMessage(cut), { role: "assistant", content: "done" }])).toBe(true);
  const failed: ModelMessage = {
    role: "tool",
    content: [
      {
        type: "tool-result",
        toolCallId: "c2",
        toolName: "fetch",
        output: { type: "error-text", value: cut },
      },
    ],
  };
  expect(showsCutOutput([user, failed])).toBe(true);
  // A user quoting a cut note does not make one.
  expect(showsCutOutput([{ role: "user", content: cut }])).toBe(false);
});
