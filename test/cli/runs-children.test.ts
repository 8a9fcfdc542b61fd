/**
 * `runs show` with child agents: the tree of a run's children (handle, agent, link and run
 * state, steps, times, result) in the table and in --json, and a child's own run naming its parent.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { type ChildTree, seedChildTree } from "../operator/support/child-tree.ts";
import { tempDir } from "../support/runtime.ts";
import { cli, json } from "./support/cli.ts";

const T0 = Date.parse("2026-03-01T09:00:00Z");
let dir: ReturnType<typeof tempDir>;
let dbPath: string;
let stores: SqliteStores;
let tree: ChildTree;

beforeAll(async () => {
  dir = tempDir("switchboard-cli-children-");
  dbPath = join(dir.path, "switchboard.sqlite");
  stores = openSqliteStores(dbPath);
  tree = await seedChildTree(stores.runtime, T0);
  stores.close();
});

afterAll(() => dir.cleanup());

const sb = (...args: string[]) => cli(args, { SWITCHBOARD_DB: dbPath });

test("runs show lists the run's children as a tree, each with its state, steps, times and result", async () => {
  const shown = await sb("runs", "show", tree.parentRunId);
  expect(shown.code).toBe(0);
  const lines = shown.stdout.split("\n");
  const at = lines.indexOf("Child agents:");
  expect(at).toBeGreaterThan(0);
  expect(lines[at + 1]).toMatch(
    /^HANDLE\s+AGENT\s+STATE\s+RUN STATE\s+STEPS\s+STARTED\s+FINISHED\s+RESULT\s+RUN$/,
  );
  expect(lines[at + 2]).toMatch(
    /^ag_done\s+researcher\s+delivered\s+completed\s+1\s+2026-03-01T09:00:01Z\s+2026-03-01T09:00:02Z\s+completed\s+run_child_done$/,
  );
  expect(lines[at + 3]).toMatch(
    /^ag_busy\s+scribe\s+running\s+running\s+0\s+2026-03-01T09:00:01Z\s+-\s+-\s+run_child_busy$/,
  );
  // The grandchild sits under the child that started it.
  expect(lines[at + 4]).toMatch(/^└ ag_deep\s+self\s+running\s+queued\s+0\s+-\s+-\s+-\s+run_child_deep$/);
  expect(lines[at + 5]).toBe("Answer:");
}, 20_000);

test("runs show --json carries the tree, and a child's run names the run that started it", async () => {
  const shown = json<{
    children: Array<{
      handle: string;
      state: string;
      run: { steps: number };
      children: Array<{ handle: string; depth: number }>;
    }>;
    childOf: null;
  }>(await sb("runs", "show", tree.parentRunId, "--json"));
  expect(shown.childOf).toBeNull();
  expect(shown.children.map((c) => [c.handle, c.state, c.run.steps])).toEqual([
    ["ag_done", "delivered", 1],
    ["ag_busy", "running", 0],
  ]);
  expect(shown.children[0]!.children).toEqual([]);
  expect(shown.children[1]!.children.map((c) => [c.handle, c.depth])).toEqual([["ag_deep", 2]]);

  const child = await sb("runs", "show", tree.busyRunId);
  expect(child.code).toBe(0);
  expect(child.stdout).toMatch(/^child agent:\s+ag_busy \(scribe\), started by run run_treeparent$/m);
  expect(child.stdout).toMatch(/^└?\s*ag_deep\s+self\s+running\s+queued/m);

  const plain = await sb("runs", "show", tree.doneRunId);
  expect(plain.stdout).toContain("Child agents: none");
}, 20_000);
