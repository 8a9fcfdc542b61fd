/**
 * Preloaded by `bun test` (bunfig.toml): hooks for the whole run, across all test files.
 * A throwaway PostgreSQL started for the run (test/support/postgres.ts) stops once every file is done.
 */
import { afterAll } from "bun:test";
import { stopTestServer } from "./postgres.ts";

// A throwaway server takes a moment to shut down cleanly.
afterAll(stopTestServer, 30_000);
