import { type ModelMessage, tool, zodSchema } from "ai";
import { z } from "zod";
import type { RuntimeStore } from "./store.ts";

/*
 * Bounded output: a tool result over OUTPUT_LIMIT_BYTES is kept in full (with the result, in one
 * fenced save) and the model gets its head and a reference it pages through with `read_output`.
 * The reference is scoped to its conversation: the store finds it only there.
 */

export const READ_OUTPUT = "read_output";
/** A result larger than this (UTF-8 bytes, as the model would get it) is stored and cut. */
export const OUTPUT_LIMIT_BYTES = 16 * 1024;
/** How much of a cut result the model gets inline, in characters. */
export const HEAD_CHARS = 4000;
/** The most `read_output` returns at once, in characters. */
export const PAGE_CHARS = 8000;

/** How a cut output's note begins; `showsCutOutput` looks for it. */
const CUT_NOTE = "\n\n[output cut: ";

/** The text a result would be in the prompt: a string as is, anything else as JSON. */
export function outputText(output: unknown): string {
  return typeof output === "string" ? output : (JSON.stringify(output) ?? "null");
}

/**
 * What the model gets for `output`: the output itself when it fits, else its first HEAD_CHARS
 * characters and how to read on, with the full text to store under `ref`.
 */
export function boundOutput(
  output: unknown,
  ref: string,
): { output: unknown; spilled: null } | { output: string; spilled: { ref: string; text: string } } {
  const text = outputText(output);
  if (Buffer.byteLength(text, "utf8") <= OUTPUT_LIMIT_BYTES) return { output, spilled: null };
  // Characters are code points, as the stores count them; PostgreSQL text cannot hold NUL.
  const full = text.replaceAll("\u0000", "\uFFFD");
  const chars = Array.from(full);
  const head = chars.slice(0, HEAD_CHARS).join("");
  return {
    output: `${head}${CUT_NOTE}this is characters 0-${HEAD_CHARS} of ${chars.length} (${Buffer.byteLength(full, "utf8")} bytes). The full output is stored as "${ref}": call ${READ_OUTPUT} with {"ref": "${ref}", "offset": ${HEAD_CHARS}} to read on.]`,
    spilled: { ref, text: full },
  };
}

// Built once: a schema's JSON form is converted on first use and then reused by every run.
// Tool texts stay in Latin-1 ("...", not an ellipsis): one character above U+00FF anywhere in a
// request makes JSC build its whole JSON body as a 16-bit string, so a photo's base64 in it costs
// twice the memory and a slower stringify and UTF-8 encode (docs/benchmarks.md, Media).
const readOutputInput = zodSchema(
  z.object({
    ref: z.string().min(1).max(100).describe('The reference from the cut output, e.g. "out_..."'),
    offset: z.number().int().min(0).default(0).describe("Character to start at (0 is the beginning)"),
    length: z.number().int().min(1).max(PAGE_CHARS).default(PAGE_CHARS),
  }),
);

/** The `read_output` tool of one conversation: pages of an output stored by boundOutput. */
export function createReadOutputTool(store: RuntimeStore, conversationId: string) {
  return tool({
    description: `Reads a part of a tool output that was too long to show whole, by its reference (out_...). Returns at most ${PAGE_CHARS} characters from offset.`,
    inputSchema: readOutputInput,
    execute: async ({ ref, offset, length }) => {
      const slice = await store.readToolOutput(conversationId, ref, { offset, length });
      if (!slice) {
        throw new Error(
          `no stored output "${ref}" in this conversation; use the reference exactly as the cut output gave it`,
        );
      }
      const end = offset + Array.from(slice.text).length;
      const next =
        end < slice.totalChars
          ? `next: {"ref": "${ref}", "offset": ${end}}`
          : "this is the end of the output";
      return `${slice.text}\n\n[${slice.toolName} output, characters ${offset}-${end} of ${slice.totalChars}; ${next}]`;
    },
  });
}

/**
 * Whether the prompt holds a cut output, the only thing `read_output` can read: without one the
 * tool is not offered, which keeps its schema (about 160 tokens) out of every ordinary request.
 */
export function showsCutOutput(messages: readonly ModelMessage[]): boolean {
  return messages.some(
    (message) =>
      message.role === "tool" &&
      message.content.some(
        (part) =>
          part.type === "tool-result" &&
          // A failed call's output is cut too, and reaches the model as error text.
          (part.output.type === "text" || part.output.type === "error-text") &&
          part.output.value.includes(CUT_NOTE),
      ),
  );
}
