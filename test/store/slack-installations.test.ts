import { runSlackInstallationsConformance } from "./slack-installations-conformance.ts";
import { forEachEngine } from "./support/engines.ts";

forEachEngine((engine, open) =>
  runSlackInstallationsConformance(engine, async () => {
    const harness = await open();
    return {
      store: harness.backend.slackInstallations,
      reopen: async () => (await harness.reopen()).slackInstallations,
      close: harness.close,
    };
  }),
);
