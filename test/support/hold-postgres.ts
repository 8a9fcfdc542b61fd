/**
 * Starts the tests' PostgreSQL server as test/support/postgres.ts chooses it, prints one JSON line
 * `{ "url": … }` and holds it until killed; the fixture for test/support/postgres.test.ts.
 */
import { serverUrl } from "./postgres.ts";

process.stdout.write(`${JSON.stringify({ url: await serverUrl() })}\n`);
setInterval(() => {}, 60_000);
