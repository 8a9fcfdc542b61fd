/** The short chaos run on postgres, with a standby taking over: see short-round.ts. */
import { test } from "bun:test";
import { SHORT_ROUND_TIMEOUT_MS, shortChaosRound } from "./short-round.ts";

test(
  "short chaos on postgres: every promise holds through kills at each kill point, every fault kind and duplicates",
  async () => {
    await shortChaosRound("postgres");
  },
  SHORT_ROUND_TIMEOUT_MS,
);
