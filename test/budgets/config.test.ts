/**
 * `budgets.web`: which budgets apply to a web chat message (by channel, never by the shape of a
 * web user's id), how operators name them, and what the configuration accepts.
 */
import { describe, expect, test } from "bun:test";
import {
  budgetScopes,
  budgetsSchema,
  filterOfScope,
  scopeNamed,
  WEB_ALL_SCOPE,
  webTokenScope,
} from "../../src/budgets/config.ts";

const schema = budgetsSchema(["web:dm", "telegram:dm"], "a surface key");
const budgets = schema.parse({
  perUser: { tokensPerDay: 5000 },
  web: { tokensPerDay: 1000, tokensPerDayPerToken: 700 },
});
const web = (principal: string) => ({ channel: "web", surface: "dm", principal });

describe("budgets.web", () => {
  test("every web session gets the shared budget besides its own, whatever its id looks like", () => {
    for (const principal of ["web:abc123", "web:web:0123456789abcdef", "web:opaque-hmac"]) {
      const scopes = budgetScopes(budgets, web(principal));
      expect(scopes.map((s) => s.scope)).toEqual([`user:${principal}`, WEB_ALL_SCOPE]);
      expect(scopes[1]).toMatchObject({
        label: "the budget all web chat users share",
        filter: { kind: "surface", channel: "web", surface: "*" },
        configured: { tokensPerDay: 1000 },
      });
    }
  });

  test("the per-token budget applies only with a token in force; other channels get neither", () => {
    const tokenScope = webTokenScope("a-web-token-0123456789");
    expect(tokenScope).toMatch(/^web:token:[0-9a-f]{12}$/);
    expect(tokenScope).not.toContain("a-web-token");
    expect(budgetScopes(budgets, web("web:x"), tokenScope).map((s) => s.scope)).toEqual([
      "user:web:x",
      WEB_ALL_SCOPE,
      tokenScope,
    ]);
    expect(
      budgetScopes(budgets, { channel: "telegram", surface: "dm", principal: "telegram:1" }, tokenScope).map(
        (s) => s.scope,
      ),
    ).toEqual(["user:telegram:1"]);
  });

  test("operators name them web:all and web:token:<fingerprint>", () => {
    expect(filterOfScope(WEB_ALL_SCOPE)).toEqual({ kind: "surface", channel: "web", surface: "*" });
    const tokenScope = webTokenScope("a-web-token-0123456789");
    expect(scopeNamed(budgets, tokenScope)?.configured).toEqual({ tokensPerDay: 700 });
    expect(scopeNamed(budgets, WEB_ALL_SCOPE)?.configured).toEqual({ tokensPerDay: 1000 });
    expect(scopeNamed(undefined, WEB_ALL_SCOPE)?.configured).toBeUndefined();
    expect(filterOfScope("web:token:not-hex")).toBeNull();
  });

  test("the configuration names what is wrong", () => {
    const empty = schema.safeParse({ web: {} });
    expect(empty.success).toBe(false);
    expect(empty.error?.issues[0]?.message).toBe("set tokensPerDay and/or tokensPerDayPerToken");
    const unknown = schema.safeParse({ web: { tokensPerWeek: 10 } });
    expect(unknown.success).toBe(false);
    expect(schema.safeParse({ web: { tokensPerDay: 0 } }).success).toBe(false);
  });
});
