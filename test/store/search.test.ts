import { runSearchConformance } from "./search-conformance.ts";
import { forEachEngine } from "./support/engines.ts";

forEachEngine((engine, open) =>
  runSearchConformance(engine, async () => {
    const { backend, close } = await open();
    return { store: backend.runtime, search: backend.search, close };
  }),
);
