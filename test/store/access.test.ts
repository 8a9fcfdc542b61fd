import { runAccessConformance } from "./access-conformance.ts";
import { forEachEngine } from "./support/engines.ts";

forEachEngine((engine, open) =>
  runAccessConformance(engine, async () => {
    const harness = await open();
    return {
      store: harness.backend.access,
      reopen: async () => (await harness.reopen()).access,
      close: harness.close,
    };
  }),
);
