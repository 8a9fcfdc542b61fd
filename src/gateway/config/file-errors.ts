import { type ParseError, parse as parseTolerantly, printParseErrorCode } from "jsonc-parser";
import { z } from "zod";
import { closest } from "../../util/suggest.ts";

/**
 * The value of a config file's JSON text. A UTF-8 byte order mark (which Windows editors write) is
 * dropped; a syntax error is reported with its line and column, which JSON.parse does not give.
 */
export function parseConfigJson(text: string): { ok: true; value: unknown } | { ok: false; problem: string } {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch (error) {
    const errors: ParseError[] = [];
    parseTolerantly(body, errors, { disallowComments: true, allowTrailingComma: false });
    const first = errors[0];
    if (!first) return { ok: false, problem: (error as Error).message };
    const { line, column } = lineAndColumn(body, first.offset);
    return {
      ok: false,
      problem: `${describeSyntaxError(printParseErrorCode(first.error))} at line ${line}, column ${column}`,
    };
  }
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lastBreak = before.lastIndexOf("\n");
  return { line: before.split("\n").length, column: offset - lastBreak };
}

/** "CommaExpected" → "a comma expected". */
function describeSyntaxError(code: string): string {
  const words = code.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
  return words === "invalid comment token"
    ? "a comment (JSON has none)"
    : `${/^[aeiou]/.test(words) ? "an" : "a"} ${words}`;
}

/**
 * One line per problem of a config file, each naming where it is and, for a mistyped key or value,
 * the closest valid one: `surfaces.telegram:dm.inputPolicy: "queu" is not one of queue, supersede,
 * interrupt, inject. Did you mean 'queue'?`
 */
export function describeConfigIssues(
  schema: z.ZodType,
  issues: readonly z.core.$ZodIssue[],
  /** The valid keys of the record at `path` (a record's keys are not in its schema's shape). */
  recordKeys: (path: readonly PropertyKey[]) => readonly string[] = () => [],
): string[] {
  return issues.map((issue) => {
    const where = issue.path.map(String).join(".") || "(top level)";
    switch (issue.code) {
      case "unrecognized_keys": {
        const known = keysAt(schema, issue.path);
        return issue.keys
          .map(
            (key) =>
              `${where}: unknown key "${key}"${suggestion(key, known)}; valid keys: ${known.join(", ")}`,
          )
          .join("; ");
      }
      case "invalid_value": {
        const valid = issue.values.map(String);
        const got = valueAt(issue);
        const shown = got === undefined ? "the value" : JSON.stringify(got);
        if (valid.length === 1) return `${where}: must be ${valid[0]} (got ${shown})`;
        return `${where}: ${shown} is not one of ${valid.join(", ")}${typeof got === "string" ? suggestion(got, valid) : ""}`;
      }
      case "invalid_key": {
        const key = String(issue.path.at(-1));
        const parent = issue.path.slice(0, -1).map(String).join(".") || "(top level)";
        const why = issue.issues.map((inner) => inner.message).join(", ");
        return `${parent}: "${key}" is not a valid key${suggestion(key, recordKeys(issue.path.slice(0, -1)))}: ${why}`;
      }
      default:
        return `${where}: ${issue.message}`;
    }
  });
}

function suggestion(input: string, candidates: readonly string[]): string {
  const match = closest(input, candidates);
  return match === null ? "" : ` (did you mean "${match}"?)`;
}

/** The value a failed check saw, which zod keeps on the issue as `input` when asked to. */
function valueAt(issue: z.core.$ZodIssue): unknown {
  return (issue as { input?: unknown }).input;
}

/** The keys an object schema at `path` accepts (records are looked through to their values). */
function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let current: z.ZodType | undefined = schema;
  for (const segment of [...path, null]) {
    current = unwrap(current);
    if (current instanceof z.ZodRecord)
      current = segment === null ? undefined : (current.valueType as z.ZodType);
    else if (current instanceof z.ZodArray)
      current = segment === null ? undefined : (current.element as z.ZodType);
    else if (current instanceof z.ZodObject) {
      if (segment === null) return Object.keys(current.shape);
      current = current.shape[String(segment)] as z.ZodType | undefined;
    } else return [];
  }
  return [];
}

function unwrap(schema: z.ZodType | undefined): z.ZodType | undefined {
  let current = schema;
  while (current instanceof z.ZodDefault || current instanceof z.ZodOptional)
    current = current.def.innerType as z.ZodType;
  return current;
}
