import { expect, test } from "bun:test";
import { asSchema, jsonSchema, tool, zodSchema } from "ai";
import { z } from "zod";
import { leanInputSchema, withLeanInputs, withoutSchemaNoise } from "../../src/runtime/lean-schema.ts";

const input = zodSchema(
  z.object({
    count: z.number().int().min(1).describe("How many"),
    offset: z.number().int().default(0),
    items: z.array(z.object({ rank: z.number().int() })).max(3),
  }),
);

test("the JSON form drops $schema and safe-integer bounds at any depth, and keeps every real constraint", async () => {
  const full = (await asSchema(input).jsonSchema) as Record<string, unknown>;
  // What zod says (the noise this removes is really there).
  expect(full.$schema).toBeString();
  expect(JSON.stringify(full)).toContain(String(Number.MAX_SAFE_INTEGER));
  const lean = await leanInputSchema(input).jsonSchema;
  expect(lean).toEqual({
    type: "object",
    properties: {
      count: { type: "integer", minimum: 1, description: "How many" },
      offset: { type: "integer", default: 0 },
      items: {
        type: "array",
        maxItems: 3,
        items: {
          type: "object",
          properties: { rank: { type: "integer" } },
          required: ["rank"],
          additionalProperties: false,
        },
      },
    },
    required: ["count", "items"],
    additionalProperties: false,
  });
  // A bound that is not the safe-integer limit stays; the source is not changed.
  const custom = { type: "integer", maximum: 10, minimum: Number.MIN_SAFE_INTEGER, $schema: "x" };
  expect(withoutSchemaNoise<object>(custom)).toEqual({ type: "integer", maximum: 10 });
  expect(custom.$schema).toBe("x");
});

test("validation is the source schema's: defaults applied, bad input refused", async () => {
  const lean = leanInputSchema(input);
  expect(await lean.validate?.({ count: 2, items: [] })).toEqual({
    success: true,
    value: { count: 2, offset: 0, items: [] },
  });
  expect((await lean.validate?.({ count: 0, items: [] }))?.success).toBe(false);
});

test("one lean schema per source (made once per process), and a schema given as JSON stays unvalidated", async () => {
  expect(leanInputSchema(input)).toBe(leanInputSchema(input));
  const plain = leanInputSchema(jsonSchema({ $schema: "x", type: "object", properties: {} }));
  expect(await plain.jsonSchema).toEqual({ type: "object", properties: {} });
  expect(plain.validate).toBeUndefined();
  const original = tool({ description: "Counts", inputSchema: input });
  const lean = withLeanInputs({ count: original });
  expect(lean.count?.description).toBe("Counts");
  expect(original.inputSchema).toBe(input);
});

test("a raw zod object is converted once too, not again for every run that offers it", async () => {
  const raw = z.object({ name: z.string().describe("Who") });
  const first = leanInputSchema(raw);
  expect(leanInputSchema(raw)).toBe(first);
  expect(await first.jsonSchema).toEqual({
    type: "object",
    properties: { name: { type: "string", description: "Who" } },
    required: ["name"],
    additionalProperties: false,
  });
  expect((await first.validate?.({ name: 1 }))?.success).toBe(false);
});
