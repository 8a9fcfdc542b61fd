/** The bun:test hooks of a test file that uses the PostgreSQL test server (test/support/postgres.ts). */
import { afterAll, beforeAll } from "bun:test";
import { closeAdminConnection, serverUrl } from "./postgres.ts";

/** initdb and the first start of a throwaway server take a few seconds, more on a busy machine. */
export const TEST_SERVER_START_TIMEOUT_MS = 60_000;

/**
 * Makes the server ready before the file's tests and other hooks (registered first, so it runs
 * first), and closes the maintenance connection after them; the server itself stops at the end
 * of the whole run.
 */
export function useTestServer(): void {
  beforeAll(async () => {
    await serverUrl();
  }, TEST_SERVER_START_TIMEOUT_MS);
  afterAll(closeAdminConnection);
}
