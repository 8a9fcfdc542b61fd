import { asSchema, type FlexibleSchema, jsonSchema, type Schema, type ToolSet } from "ai";

/*
 * What a tool's input schema says to the model, without what says nothing: the `$schema` URI
 * zod puts on every schema (48 bytes a tool) and the ±Number.MAX_SAFE_INTEGER bounds it gives
 * every integer (no model needs to be told a count fits in 53 bits). Validation is the source
 * schema's, so inputs are checked (and defaults applied) exactly as before.
 */

const SAFE_BOUNDS: Readonly<Record<string, number>> = {
  maximum: Number.MAX_SAFE_INTEGER,
  minimum: Number.MIN_SAFE_INTEGER,
};

/** The JSON Schema less `$schema` and safe-integer bounds, at any depth; the input is not changed. */
export function withoutSchemaNoise<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => withoutSchemaNoise(item)) as T;
  if (typeof value !== "object" || value === null) return value;
  const lean: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === "$schema" || SAFE_BOUNDS[key] === item) continue;
    lean[key] = withoutSchemaNoise(item);
  }
  return lean as T;
}

/**
 * By the schema as given: a module-level schema is made lean once per process. Keyed by what the
 * tool passed, not by `asSchema`'s result, which is a new wrapper (converted again) each time a
 * raw zod object is given.
 */
const leanSchemas = new WeakMap<object, Schema<unknown>>();

/** `input` as a schema whose JSON form is lean (see above), computed on first use and kept. */
export function leanInputSchema(input: FlexibleSchema<unknown> | undefined): Schema<unknown> {
  const key = typeof input === "object" && input !== null ? input : undefined;
  const cached = key && leanSchemas.get(key);
  if (cached) return cached;
  const source = asSchema(input);
  let lean = leanSchemas.get(source);
  if (!lean) {
    lean = jsonSchema(
      () => {
        const full = source.jsonSchema;
        return isPromiseLike(full)
          ? Promise.resolve(full).then(withoutSchemaNoise)
          : withoutSchemaNoise(full);
      },
      source.validate ? { validate: source.validate } : {},
    );
    leanSchemas.set(source, lean);
  }
  if (key) leanSchemas.set(key, lean);
  return lean;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

/** A copy of `tools` whose input schemas are lean; the definitions themselves are not changed. */
export function withLeanInputs(tools: ToolSet): ToolSet {
  const lean: ToolSet = {};
  for (const [name, definition] of Object.entries(tools)) {
    lean[name] = { ...definition, inputSchema: leanInputSchema(definition.inputSchema) } as typeof definition;
  }
  return lean;
}
