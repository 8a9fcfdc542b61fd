/** Reading request bodies within a size limit, and validating input with zod. */
import type { z } from "zod";
import { SwitchboardError } from "../../errors.ts";
import { readBodyText } from "../../util/read-body.ts";

export { PayloadTooLargeError, readBodyText } from "../../util/read-body.ts";

/** An empty body counts as `{}` so POSTs whose fields are all optional need none. */
export async function readJsonBody<S extends z.ZodType>(
  request: Request,
  schema: S,
  maxBytes: number,
): Promise<z.infer<S>> {
  const text = await readBodyText(request, maxBytes);
  let value: unknown = {};
  if (text.trim() !== "") {
    try {
      value = JSON.parse(text);
    } catch {
      throw new SwitchboardError("input_invalid", "The request body is not valid JSON; send a JSON object.");
    }
  }
  return validate(schema, value, "body");
}

/** Parses `value` or throws `input_invalid` naming the first offending field. */
export function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: "body" | "query",
): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const kind = where === "query" ? "query parameter" : "field";
  if (issue?.code === "unrecognized_keys") {
    const names = issue.keys.map((key) => `'${key}'`).join(", ");
    throw new SwitchboardError("input_invalid", `Unknown ${kind} ${names}; check its spelling.`);
  }
  const path = issue?.path.map(String).join(".");
  const field = path ? `${kind} '${path}'` : `the ${where}`;
  throw new SwitchboardError("input_invalid", `Invalid ${field}: ${issue?.message ?? "invalid value"}.`);
}

/** Query parameters as an object; empty values count as absent (`?state=` means no filter). */
export function queryObject(url: URL): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) if (value !== "") query[key] = value;
  return query;
}
