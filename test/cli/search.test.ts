/**
 * `switchboard search` in database mode and API mode (GET /api/search) over a seeded database:
 * the operator sees every conversation, can narrow to one, and a malformed query is a clear
 * input error with nothing changed.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { join } from "node:path";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { createOperatorService, type OperatorService } from "../../src/operator/service.ts";
import type { SearchHit } from "../../src/search/store.ts";
import { systemClock } from "../../src/util/clock.ts";
import {
  capturingLogger,
  type RecordedCall,
  recordingOperator,
  testServices,
} from "../http/support/services.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { cli, json } from "./support/cli.ts";

const TOKEN = "op-token-5f0c9a7e-secret";
const TIMEOUT_MS = 30_000;

let dir: ReturnType<typeof tempDir>;
let dbPath: string;
let seed: Seed;
let operator: OperatorService;
let server: HttpServer;
let calls: RecordedCall[];

beforeEach(async () => {
  dir = tempDir("switchboard-cli-search-");
  dbPath = join(dir.path, "switchboard.sqlite");
  seed = await seedDatabase(dbPath);
  operator = createOperatorService({ stores: seed.stores, clock: systemClock });
  // The real HTTP server and operator routes, in front of the real service.
  const recorded = recordingOperator(operator);
  calls = recorded.calls;
  const { services } = testServices({ operator: recorded.operator, operatorToken: TOKEN });
  server = await startHttpServer({ host: "127.0.0.1", port: 0, services, logger: capturingLogger().logger });
});

afterEach(async () => {
  await server.stop();
  seed.stores.close();
  dir.cleanup();
});

const db = (...args: string[]) => cli(args, { SWITCHBOARD_DB: dbPath });
const api = (...args: string[]) =>
  cli(args, { SWITCHBOARD_URL: server.url, SWITCHBOARD_OPERATOR_TOKEN: TOKEN });

test(
  "database mode: every conversation, narrowed with --conversation; the table shows the snippet",
  async () => {
    const all = await db("search", "deploy notes", "--json");
    expect(all.code).toBe(0);
    const hits = json<SearchHit[]>(all);
    expect(hits.map((h) => h.role).sort()).toEqual(["assistant", "user"]);
    expect(hits.every((h) => h.conversationId === seed.slack.conversationId)).toBe(true);
    expect(hits[0]!.snippet).toMatch(/\[[Dd]eploy\] \[notes\]/);
    const narrowed = await db("search", "deploy", "--conversation", seed.telegram.conversationId, "--json");
    expect(json(narrowed)).toEqual([]);
    const table = await db("search", "standup");
    expect(table.stdout).toContain("SNIPPET");
    expect(table.stdout).toContain("[standup]");
    expect((await db("search", "nothing-like-this")).stdout).toBe("No matches.\n");
  },
  TIMEOUT_MS,
);

test(
  "a malformed query is an input error naming the fix, in both modes",
  async () => {
    const local = await db("search", '"unclosed');
    expect(local.code).not.toBe(0);
    expect(local.stderr).toContain("unclosed quote");
    const remote = await api("search", "???");
    expect(remote.code).toBe(local.code);
    expect(remote.stderr).toContain("no words to search for");
  },
  TIMEOUT_MS,
);

test(
  "API mode: GET /api/search with q, conversation and limit; the result is the service's",
  async () => {
    const result = await api(
      "search",
      "the summary",
      "--conversation",
      seed.telegram.conversationId,
      "--limit",
      "3",
      "--json",
    );
    expect(result.code).toBe(0);
    expect(json(result)).toEqual(
      JSON.parse(
        JSON.stringify(
          await operator.search("the summary", { conversationId: seed.telegram.conversationId, limit: 3 }),
        ),
      ),
    );
    expect(json<SearchHit[]>(result)).toHaveLength(1);
    expect(calls.at(-1)).toEqual({
      method: "search",
      args: ["the summary", { conversationId: seed.telegram.conversationId, limit: 3 }],
    });
    const raw = await fetch(`${server.url}/api/search?q=summary&bogus=1`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(raw.status).toBe(400);
  },
  TIMEOUT_MS,
);
