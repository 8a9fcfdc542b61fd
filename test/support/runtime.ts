import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toUsage } from "../../src/models/usage.ts";
import { Runtime, type RuntimeOptions } from "../../src/runtime/runtime.ts";
import type { ModelEntry } from "../../src/runtime/step.ts";
import type { RuntimeStore } from "../../src/runtime/store.ts";
import { openPostgresRuntimeStore } from "../../src/store/postgres/runtime-store.ts";
import { openSqliteStores, type SqliteStores } from "../../src/store/sqlite/index.ts";
import { createScriptedModel, type Script, type ScriptedModel } from "./llm/scripted-model.ts";
import { createDatabase } from "./postgres.ts";

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

/** The database engines a runtime runs on; suites that must hold on both loop over these. */
export const ENGINES = ["sqlite", "postgres"] as const;
export type Engine = (typeof ENGINES)[number];

export interface EngineHarness {
  runtime: Runtime;
  store: RuntimeStore;
  model: ScriptedModel;
  close(): Promise<void>;
}

/**
 * A runtime with one scripted model on `engine`: a temp-file SQLite database, or a fresh
 * database on the PostgreSQL test server (see support/postgres.ts), dropped on close.
 */
export async function createEngineHarness(
  engine: Engine,
  script: Script,
  options: Partial<Omit<RuntimeOptions, "store" | "models">> = {},
): Promise<EngineHarness> {
  if (engine === "sqlite") {
    const harness = createHarness(script, options);
    return { ...harness, store: harness.stores.runtime };
  }
  const db = await createDatabase({ migrated: true });
  let store: RuntimeStore;
  try {
    store = await openPostgresRuntimeStore(db.url);
  } catch (error) {
    await db.drop();
    throw error;
  }
  const model = createScriptedModel(script);
  const runtime = new Runtime({
    ...options,
    store,
    models: [{ label: "scripted", model }],
    readUsage: options.readUsage ?? toUsage,
  });
  return {
    runtime,
    store,
    model,
    async close() {
      await runtime.close({ gracePeriodMs: 0, forceTimeoutMs: 1000 });
      await store.close();
      await db.drop();
    },
  };
}
