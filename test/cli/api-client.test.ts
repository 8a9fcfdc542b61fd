/** How the API client turns the gateway's answers into results and SwitchboardErrors. */
import { describe, expect, test } from "bun:test";
import { createApiOperatorService } from "../../src/cli/api-client.ts";
import { exitCodeFor } from "../../src/cli/exit-codes.ts";
import { isSwitchboardError, type SwitchboardError } from "../../src/errors.ts";

const TOKEN = "tok-9c1d4e2f";

/** A client whose fetch answers with `answer` and records the request. */
function clientAnswering(answer: () => Response | Promise<Response>, baseUrl = "http://127.0.0.1:8080/gw") {
  const seen: Request[] = [];
  const service = createApiOperatorService({
    baseUrl,
    token: TOKEN,
    timeoutMs: 200,
    // Like the real fetch, gives up when the client's timeout signal aborts.
    fetch: (async (input: URL, init?: RequestInit) => {
      seen.push(new Request(input, init));
      const aborted = new Promise<never>((_, reject) =>
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason), { once: true }),
      );
      return Promise.race([answer(), aborted]);
    }) as typeof fetch,
  });
  return { service, seen };
}

async function failure(promise: Promise<unknown>): Promise<SwitchboardError> {
  try {
    await promise;
  } catch (error) {
    if (isSwitchboardError(error)) return error;
    throw error;
  }
  throw new Error("expected a SwitchboardError");
}

const errorBody = (status: number, code: string, message: string) =>
  Response.json({ error: { code, message } }, { status });

describe("API client", () => {
  test("keeps the base path, encodes ids and leaves out absent query parameters", async () => {
    const { service, seen } = clientAnswering(() => Response.json([]));
    await service.outbox.list({ state: "failed" });
    await service.outbox.show("run_1:0");
    expect(seen.map((r) => r.url)).toEqual([
      "http://127.0.0.1:8080/gw/api/outbox?state=failed",
      "http://127.0.0.1:8080/gw/api/outbox/run_1%3A0",
    ]);
    expect(seen[0]!.headers.get("authorization")).toBe(`Bearer ${TOKEN}`);
  });

  test("a 404 is null for reads and not_found for changes", async () => {
    const { service } = clientAnswering(() => errorBody(404, "not_found", "There is no outbox record."));
    expect(await service.outbox.show("obx_x")).toBeNull();
    expect(await service.runs.show("run_x")).toBeNull();
    const error = await failure(service.outbox.cancel("obx_x", "operator:ann"));
    expect(error.code).toBe("not_found");
    expect(exitCodeFor(error)).toBe(3);
  });

  test("the gateway's refusal keeps its code and message", async () => {
    const { service } = clientAnswering(() =>
      errorBody(400, "input_invalid", "Outbox record obx_1 is delivered and cannot become failed."),
    );
    const error = await failure(service.outbox.resolve("obx_1", "failed", "operator:ann", "x"));
    expect(error.code).toBe("input_invalid");
    expect(error.message).toBe("Outbox record obx_1 is delivered and cannot become failed.");
    expect(exitCodeFor(error)).toBe(4);
  });

  test("401 and 403 say what to do and never show the token", async () => {
    const refused = await failure(
      clientAnswering(() => errorBody(401, "unauthorized", "bad token")).service.runs.list({}),
    );
    expect(refused.message).toContain("refused the operator token (HTTP 401)");
    const disabled = await failure(
      clientAnswering(() => errorBody(403, "forbidden", "The operator API is disabled.")).service.runs.list(
        {},
      ),
    );
    expect(disabled.message).toContain(
      "does not allow operator calls (HTTP 403: The operator API is disabled.)",
    );
    for (const error of [refused, disabled]) {
      expect(error.code).toBe("unauthorized");
      expect(exitCodeFor(error)).toBe(4);
      expect(error.message).not.toContain(TOKEN);
    }
  });

  test("a gateway fault, a non-JSON answer and no answer are errors (exit 1)", async () => {
    const internal = await failure(
      clientAnswering(() => errorBody(500, "internal", "look for requestId r1 in its log")).service.runs.list(
        {},
      ),
    );
    expect(internal.message).toBe("look for requestId r1 in its log");
    const html = await failure(
      clientAnswering(() => new Response("<html>Bad gateway</html>", { status: 502 })).service.runs.list({}),
    );
    expect(html.message).toContain("answered GET /gw/api/runs with HTTP 502 and a body that is not JSON");
    const silent = await failure(
      clientAnswering(() => new Promise<Response>(() => {})).service.conversations.list({}),
    );
    expect(silent.message).toContain("Could not reach the gateway at http://127.0.0.1:8080/gw");
    for (const error of [internal, html, silent]) expect(exitCodeFor(error)).toBe(1);
  });

  test("refuses a base URL that is not http(s)", () => {
    expect(() => createApiOperatorService({ baseUrl: "localhost:8080", token: TOKEN })).toThrow(
      "is not an http(s) URL",
    );
  });
});
