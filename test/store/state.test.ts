import { expect } from "bun:test";
import type { OperatorRuntimeStore } from "../../src/operator/runtime-store.ts";
import type { StateStore } from "../../src/state/store.ts";
import { runStateConformance } from "./state-conformance.ts";
import { forEachEngine } from "./support/engines.ts";

forEachEngine((engine, open) =>
  runStateConformance(engine, async () => {
    const { backend, close } = await open();
    // Both engines keep the state slots in the runtime store's own transactions: one object.
    expect(backend.state).toBe(backend.runtime as unknown as StateStore);
    return { store: backend.runtime as OperatorRuntimeStore & StateStore, close };
  }),
);
