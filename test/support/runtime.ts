import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toUsage } from "../../src/models/usage.ts";
import { Runtime, type RuntimeOptions } from "../../src/runtime/runtime.ts";
import type { ModelEntry } from "../../src/runtime/step.ts";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { createScriptedModel, type Script, type ScriptedModel } from "./llm/scripted-model.ts";

export function tempDir(prefix = "switchboard-test-"): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

export interface RuntimeHarness {
  runtime: Runtime;
  stores: SqliteStores;
  model: ScriptedModel;
  dbPath: string;
  close(): Promise<void>;
}

/** A runtime on a temp-file SQLite database with one scripted model. */
export function createHarness(
  script: Script,
  options: Partial<Omit<RuntimeOptions, "store" | "models">> & {
    extraModels?: ModelEntry[];
    dbPath?: string;
  } = {},
): RuntimeHarness {
  const dir = options.dbPath ? null : tempDir();
  const dbPath = options.dbPath ?? join(dir!.path, "switchboard.sqlite");
  const stores = openSqliteStores(dbPath);
  const model = createScriptedModel(script);
  const runtime = new Runtime({
    ...options,
    store: stores.runtime,
    models: [{ label: "scripted", model }, ...(options.extraModels ?? [])],
    readUsage: options.readUsage ?? toUsage,
  });
  return {
    runtime,
    stores,
    model,
    dbPath,
    async close() {
      await runtime.close({ gracePeriodMs: 0, forceTimeoutMs: 1000 });
      stores.close();
      dir?.cleanup();
    },
  };
}

export const text = (value: string) => [{ type: "text" as const, text: value }];
