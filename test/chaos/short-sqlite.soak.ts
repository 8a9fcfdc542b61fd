/** The short chaos run on sqlite: see short-round.ts. */
import { test } from "bun:test";
import { SHORT_ROUND_TIMEOUT_MS, shortChaosRound } from "./short-round.ts";

test(
  "short chaos on sqlite: every promise holds through kills at each kill point, every fault kind and duplicates",
  async () => {
    await shortChaosRound("sqlite");
  },
  SHORT_ROUND_TIMEOUT_MS,
);
