import { afterEach, beforeEach, expect, test } from "bun:test";
import { join } from "node:path";
import { isSwitchboardError } from "../../src/errors.ts";
import { createOperatorService, type OperatorService } from "../../src/operator/service.ts";
import { tempDir } from "../support/runtime.ts";
import { type Seed, seedDatabase } from "./support/seed.ts";

let dir: ReturnType<typeof tempDir>;
let seed: Seed;
let operator: OperatorService;

beforeEach(async () => {
  dir = tempDir("switchboard-operator-budgets-");
  seed = await seedDatabase(join(dir.path, "switchboard.sqlite"));
  operator = createOperatorService({
    stores: seed.stores,
    clock: seed.clock,
    budgets: {
      budgets: {
        timezone: "Europe/Berlin",
        perUser: { tokensPerDay: 1000 },
        perSurface: { "*:*": { tokensPerMonth: 9 } },
      },
      timezone: "UTC",
    },
  });
});
afterEach(() => {
  seed.stores.close();
  dir.cleanup();
});

async function refusedWith(work: Promise<unknown>, code: string): Promise<string> {
  try {
    await work;
  } catch (error) {
    if (isSwitchboardError(error) && error.code === code) return error.message;
    throw error;
  }
  throw new Error(`expected ${code}`);
}

test("a raise merges over the configuration, a reset counts from now, a clear goes back; each records who", async () => {
  const scope = "user:telegram:42";
  const before = await operator.budgets.status(scope);
  expect(before).toMatchObject({
    scope,
    timezone: "Europe/Berlin",
    configured: { tokensPerDay: 1000 },
    override: null,
  });
  expect(before.limits.map((l) => [l.field, l.limit])).toEqual([["tokensPerDay", 1000]]);

  const raised = await operator.budgets.raise(
    scope,
    { tokensPerDay: 5000, costPerMonthUsd: 2 },
    "operator:ann",
  );
  expect(raised.limits.map((l) => [l.field, l.limit])).toEqual([
    ["tokensPerDay", 5000],
    ["costPerMonthUsd", 2],
  ]);
  expect(raised.override).toMatchObject({ updatedBy: "operator:ann", resetAtMs: null });

  await seed.clock.advance(1000);
  const reset = await operator.budgets.reset(scope, "operator:bob");
  expect(reset.override).toMatchObject({ resetAtMs: seed.clock.now(), updatedBy: "operator:bob" });
  expect(reset.limits[0]).toMatchObject({ used: 0, remaining: 5000 });

  const cleared = await operator.budgets.clear(scope, "operator:ann");
  expect(cleared.override).toBeNull();
  expect(cleared.limits.map((l) => [l.field, l.limit])).toEqual([["tokensPerDay", 1000]]);
  expect(await refusedWith(operator.budgets.clear(scope, "operator:ann"), "not_found")).toContain(
    "already follows the configuration",
  );

  const overview = await operator.budgets.show();
  expect(overview.scopes.map((s) => s.scope)).toEqual(["surface:*:*"]);
  expect(overview.timezone).toBe("Europe/Berlin");
});

test("bad input is refused with what to do and changes nothing", async () => {
  expect(await refusedWith(operator.budgets.status("telegram:42"), "input_invalid")).toContain(
    "use user:<channel>:<user id>",
  );
  expect(
    await refusedWith(operator.budgets.raise("user:telegram:42", {}, "operator:ann"), "input_invalid"),
  ).toContain("No limit was given");
  expect(
    await refusedWith(
      operator.budgets.raise("user:telegram:42", { tokensPerDay: 1.5 }, "operator:ann"),
      "input_invalid",
    ),
  ).toContain("tokensPerDay must be a whole number");
  expect(
    await refusedWith(
      operator.budgets.raise("user:telegram:42", { tokensPerWeek: 5 } as never, "operator:ann"),
      "input_invalid",
    ),
  ).toContain('"tokensPerWeek" is not a budget limit');
  expect(
    await refusedWith(
      operator.budgets.raise("surface:telegram:dm", { tokensPerDay: 5 }, "operator:ann"),
      "input_invalid",
    ),
  ).toContain("No budget is configured for telegram:dm. Add it to budgets.perSurface");
  expect(await seed.stores.budgets.listOverrides()).toEqual([]);
});
