/**
 * fast-check arbitraries for hostile platform payloads: realistic bodies with a few fields
 * deleted, retyped or replaced by oversized or badly encoded values, and plain JSON-ish junk.
 */
import fc from "fast-check";

type Path = (string | number)[];

/** Lone surrogates: what invalid UTF-8 (or a broken client) becomes once it is a JS string. */
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));

/** Strings a platform should never send: empty, huge, control characters, broken UTF-16. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constant(""),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: loneSurrogate, minLength: 1, maxLength: 4 }),
  fc.constantFrom("\u0000", "\r\n", "\u202e", "<@U0BOT>", "/cancel", "@switchboard_test_bot"),
  fc.integer({ min: 300, max: 20_000 }).map((n) => "x".repeat(n)),
);

/** Values of the wrong type, or of the right type with absurd content. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.constantFrom(null, true, false, 0, -1, 1.5, Number.MAX_SAFE_INTEGER + 2, -0, 1e308, Number.NaN),
  fc.constantFrom(Number.POSITIVE_INFINITY, undefined, [], {}, [null], { id: "x" }),
  fc.jsonValue({ maxDepth: 2 }),
);

/** Every path to a value inside `value` (the root is the empty path). */
function pathsOf(value: unknown, prefix: Path = []): Path[] {
  const paths: Path[] = [prefix];
  if (typeof value !== "object" || value === null) return paths;
  for (const [key, item] of Object.entries(value))
    paths.push(...pathsOf(item, [...prefix, Array.isArray(value) ? Number(key) : key]));
  return paths;
}

type Mutation = { pick: number; op: "delete" } | { pick: number; op: "replace"; value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ pick: fc.nat(), op: fc.constant("delete" as const) }),
  fc.record({ pick: fc.nat(), op: fc.constant("replace" as const), value: hostileValue }),
);

function apply(base: unknown, mutations: Mutation[]): unknown {
  let root = structuredClone(base);
  for (const m of mutations) {
    const paths = pathsOf(root);
    const path = paths[m.pick % paths.length] ?? [];
    if (path.length === 0) {
      if (m.op === "replace") root = m.value;
      continue;
    }
    let parent = root as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    const last = path[path.length - 1] as string | number;
    if (m.op === "delete") {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else {
      parent[last] = m.value;
    }
  }
  return root;
}

/** `base` (a realistic payload) with one to four fields deleted or replaced by hostile values. */
export function mutated(base: unknown): fc.Arbitrary<unknown> {
  return fc.array(mutation, { minLength: 1, maxLength: 4 }).map((mutations) => apply(base, mutations));
}

/** One of `bases`, mutated; or arbitrary JSON-ish junk. */
export function hostilePayload(bases: readonly unknown[]): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...bases).chain(mutated) },
    { weight: 1, arbitrary: fc.anything({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  );
}
