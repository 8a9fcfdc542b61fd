import { describe, expect, test } from "bun:test";
import type { HttpRoute } from "../../channels/types.ts";
import { combinedAnswer, combineSharedRoutes } from "../../src/gateway/shared-routes.ts";

/** A shared POST route that answers `status` and records the bodies it was handed. */
function account(status: number, seen: string[]): HttpRoute {
  return {
    method: "POST",
    path: "/whatsapp/webhook",
    shared: true,
    handle: async (request) => {
      seen.push(await request.text());
      return new Response(String(status), { status });
    },
  };
}

describe("routes several accounts share", () => {
  test.each([
    [[200, 401], 0, "the account whose secret signed it answers; the other's refusal does not count"],
    [[401, 200], 1, "in any order"],
    [[401, 403], 0, "refused by every account: the first refusal"],
    [[200, 503], 1, "one account not accepting: the platform delivers again"],
    [[400, 500, 200], 1, "a failure to record comes before a bad request"],
    [[200, 400], 1, "a body an account could not read"],
    [[200, 200], 0, "both took their items"],
  ])("answers %p with index %p: %s", (statuses, expected) => {
    expect(combinedAnswer(statuses)).toBe(expected);
  });

  test("each account gets its own copy of the body; unshared routes stay as they are", async () => {
    const seenA: string[] = [];
    const seenB: string[] = [];
    const plain: HttpRoute = {
      method: "POST",
      path: "/telegram/webhook",
      handle: async () => new Response("ok"),
    };
    const routes = combineSharedRoutes([account(200, seenA), account(401, seenB), plain]);
    expect(routes).toHaveLength(2);
    expect(routes[1]).toBe(plain);
    const answer = await routes[0]!.handle(
      new Request("http://127.0.0.1/whatsapp/webhook", { method: "POST", body: "the body" }),
    );
    expect(answer.status).toBe(200);
    expect(seenA).toEqual(["the body"]);
    expect(seenB).toEqual(["the body"]);
  });
});
