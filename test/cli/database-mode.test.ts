import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { OutboxRecord } from "../../outbox/types.ts";
import type { Schedule } from "../../schedules/types.ts";
import { createOperatorService, type OperatorService } from "../../src/operator/service.ts";
import { openDatabase } from "../../src/store/sqlite/database.ts";
import { MIGRATIONS } from "../../src/store/sqlite/index.ts";
import {
  checkDatabase,
  type DatabaseCheck,
  EXPECTED_SCHEMA_VERSION,
  openExistingStores,
} from "../../src/store/sqlite/operator.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { cli, json } from "./support/cli.ts";

// Each test spawns up to six CLI processes (~150 ms each, more on a loaded machine).
const TIMEOUT_MS = 20_000;

let dir: ReturnType<typeof tempDir>;
let dbPath: string;
let seed: Seed;
let operator: OperatorService;

beforeEach(async () => {
  dir = tempDir("switchboard-cli-");
  dbPath = join(dir.path, "switchboard.sqlite");
  seed = await seedDatabase(dbPath);
  operator = createOperatorService({ stores: seed.stores, clock: seed.clock });
});

afterEach(() => {
  seed.stores.close();
  dir.cleanup();
});

/** The CLI against the seeded database, selected the way operators do: $SWITCHBOARD_DB. */
const sb = (...args: string[]) => cli(args, { SWITCHBOARD_DB: dbPath });
/** What a value looks like after a JSON round trip (undefined fields dropped). */
const asJson = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe("reading", () => {
  test(
    "outbox list --json is exactly the service's result; the table shows ids and states",
    async () => {
      const listed = await sb("outbox", "list", "--json");
      expect(listed.code).toBe(0);
      expect(json(listed)).toEqual(asJson((await operator.outbox.list({})).items));

      const table = await sb("outbox", "list", "--state", "ambiguous");
      expect(table.code).toBe(0);
      const lines = table.stdout.trimEnd().split("\n");
      expect(lines[0]).toMatch(/^ID\s+STATE\s+KIND\s+CHANNEL\s+TARGET\s+ATTEMPTS\s+UPDATED\s+TEXT$/);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toContain(seed.ambiguous.outboxId!);
      expect(lines[1]).toContain("ambiguous");
      expect(lines[1]).toContain("2026-03-01T09:00:");
      expect(lines[1]).toContain("Action items: ship the CLI.");

      const bySlack = json<OutboxRecord[]>(
        await sb("outbox", "list", "--conversation", seed.slack.conversationId, "--json"),
      );
      expect(bySlack.map((r) => r.id)).toEqual([seed.pending.outboxId!, seed.failed.outboxId!]);
    },
    TIMEOUT_MS,
  );

  test(
    "outbox show finds a record by id or key; an unknown one exits 3 with nothing on stdout",
    async () => {
      const byKey = await sb("outbox", "show", `${seed.ambiguous.runId}:0`, "--json");
      expect(json(byKey)).toEqual(asJson(await operator.outbox.show(seed.ambiguous.outboxId!)));

      const human = await sb("outbox", "show", seed.ambiguous.outboxId!);
      expect(human.stdout).toContain("state:        ambiguous");
      expect(human.stdout).toContain("connection reset after the request was sent");
      expect(human.stdout).toMatch(/History:\nTIME\s+ACTOR\s+ACTION\s+NOTE\n/);

      const missing = await sb("outbox", "show", "obx_missing", "--json");
      expect(missing).toMatchObject({ code: 3, stdout: "" });
      expect(missing.stderr).toContain(
        "No outbox record obx_missing. List records with `switchboard outbox list`.",
      );
    },
    TIMEOUT_MS,
  );

  test(
    "runs list and show",
    async () => {
      expect(json(await sb("runs", "list", "--json"))).toEqual(asJson((await operator.runs.list({})).items));
      const queued = json<Array<{ id: string }>>(await sb("runs", "list", "--state", "queued", "--json"));
      expect(queued.map((r) => r.id)).toEqual([seed.queuedRunId]);
      const limited = await sb("runs", "list", "--limit", "2");
      const cursor = (await operator.runs.list({ limit: 2 })).nextCursor!;
      expect(limited.stdout.trimEnd().split("\n")).toEqual([
        expect.stringMatching(/^ID\s+STATE/),
        expect.stringContaining(seed.queuedRunId),
        expect.stringContaining(seed.pending.runId),
        "",
        `More: repeat with --cursor ${cursor} (or --all).`,
      ]);
      const next = await sb("runs", "list", "--limit", "2", "--cursor", cursor, "--json");
      expect(json<Array<{ id: string }>>(next).map((r) => r.id)).toEqual([
        seed.failed.runId,
        seed.ambiguous.runId,
      ]);
      const bad = await sb("runs", "list", "--cursor", "nope");
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('cursor "nope" is not a cursor of the runs list');

      const shown = await sb("runs", "show", seed.delivered.runId, "--json");
      expect(json(shown)).toEqual(asJson(await operator.runs.show(seed.delivered.runId)));
      const human = await sb("runs", "show", seed.delivered.runId);
      expect(human.stdout).toContain("Answer:\nHere is **the summary**.");
      expect(human.stdout).toContain("cost unknown");

      const missing = await sb("runs", "show", "run_missing");
      expect(missing.code).toBe(3);
      expect(missing.stderr).toContain("No run run_missing");
    },
    TIMEOUT_MS,
  );

  test(
    "conversations list and show, paged",
    async () => {
      expect(json(await sb("conversations", "list", "--json"))).toEqual(
        asJson((await operator.conversations.list({})).items),
      );
      const table = await sb("conversations", "list");
      expect(table.stdout).toMatch(/^ID\s+KEY\s+RUNS\s+ACTIVE\s+LAST ACTIVITY\s+CREATED\n/);
      expect(table.stdout).toContain(seed.telegram.key);

      const id = seed.telegram.conversationId;
      const page = await sb("conversations", "show", id, "--limit", "2", "--json");
      expect(json(page)).toEqual(asJson(await operator.conversations.show(id, { limit: 2 })));
      const human = await sb("conversations", "show", id, "--limit", "2");
      // The newest two, printed in reading order, and how to see the older ones.
      expect(human.stdout.indexOf("Action items: ship the CLI.")).toBeLessThan(
        human.stdout.indexOf("One more thing"),
      );
      expect(human.stdout).not.toContain("Summarise yesterday's standup");
      const cursor = json<{ nextCursor: string }>(page).nextCursor;
      expect(human.stdout).toContain(
        `Older messages: switchboard conversations show ${id} --cursor ${cursor}\n`,
      );
      const next = json<{ items: unknown[]; nextCursor: string | null }>(
        await sb("conversations", "show", id, "--cursor", cursor, "--limit", "3", "--json"),
      );
      expect(next).toMatchObject({ nextCursor: null });
      expect(next.items).toHaveLength(3);

      expect((await sb("conversations", "show", "conv_missing")).code).toBe(3);
    },
    TIMEOUT_MS,
  );

  test(
    "conversations list --query / -q keeps the matching conversations; none says so; too long is refused",
    async () => {
      const byKey = await sb("conversations", "list", "--query", seed.slack.key.toUpperCase(), "--json");
      expect(json(byKey)).toEqual(
        asJson((await operator.conversations.list({ query: seed.slack.key })).items),
      );
      expect(json<Array<{ id: string }>>(byKey).map((c) => c.id)).toEqual([seed.slack.conversationId]);
      const short = await sb("conversations", "list", "-q", seed.telegram.key);
      expect(short.code).toBe(0);
      expect(short.stdout).toContain(seed.telegram.conversationId);
      expect(short.stdout).not.toContain(seed.slack.conversationId);
      const none = await sb("conversations", "list", "-q", "%");
      expect(none.code).toBe(0);
      expect(none.stdout).toBe('No conversation matches "%".\n');
      const long = await sb("conversations", "list", "-q", "x".repeat(201));
      expect(long.code).toBe(4);
      expect(long.stderr).toContain("query is 201 characters long; search with at most 200");
    },
    TIMEOUT_MS,
  );

  test(
    "schedules list shows live ones of every conversation; --all adds ended ones",
    async () => {
      const { daily, paused, cancelled } = seed.schedules;
      const table = await sb("schedules", "list");
      expect(table.stdout).toContain(daily.id);
      expect(table.stdout).toContain("cron 0 8 * * * (Europe/Berlin)");
      expect(table.stdout).toContain(paused.id);
      expect(table.stdout).not.toContain(cancelled.id);
      const all = json<Schedule[]>(await sb("schedules", "list", "--all", "--json"));
      expect(all).toEqual(asJson(await operator.schedules.list({ includeEnded: true })) as Schedule[]);
      expect(all.map((s) => s.id)).toContain(cancelled.id);
      expect(json(await sb("schedules", "runs", daily.id, "--json"))).toEqual([]);
      expect((await sb("schedules", "runs", "sch_missing")).code).toBe(3);
    },
    TIMEOUT_MS,
  );
});

describe("changing", () => {
  test(
    "outbox resolve --delivered on an ambiguous record records who, when, what and the note",
    async () => {
      const before = Date.now();
      const resolved = await sb(
        "outbox",
        "resolve",
        seed.ambiguous.outboxId!,
        "--delivered",
        "--note",
        "seen in the chat at 09:01",
        "--actor",
        "ann",
      );
      expect(resolved.code).toBe(0);
      expect(resolved.stdout).toContain(`Outbox record ${seed.ambiguous.outboxId} is now delivered`);
      const record = await seed.stores.outbox.show(seed.ambiguous.outboxId!);
      expect(record?.state).toBe("delivered");
      const entry = record!.history.at(-1)!;
      expect(entry).toMatchObject({
        actor: "operator:ann",
        action: "resolve delivered",
        note: "seen in the chat at 09:01",
      });
      expect(entry.atMs).toBeGreaterThanOrEqual(before);
      expect(entry.atMs).toBeLessThanOrEqual(Date.now());

      const again = await sb("outbox", "resolve", seed.ambiguous.outboxId!, "--failed", "--note", "oops");
      expect(again.code).toBe(4);
      expect(again.stderr).toContain("is delivered and cannot become failed; delivered is final");
      expect((await seed.stores.outbox.show(seed.ambiguous.outboxId!))?.history).toEqual(record!.history);
    },
    TIMEOUT_MS,
  );

  test(
    "outbox retry and cancel, with the actor from $USER and --json output",
    async () => {
      const retried = await sb("outbox", "retry", seed.failed.outboxId!, "--note", "chat is back");
      expect(retried.code).toBe(0);
      const record = await seed.stores.outbox.show(seed.failed.outboxId!);
      expect(record).toMatchObject({
        state: "pending",
        attempts: 0,
        lastError: "400 Bad Request: chat not found",
      });
      expect(record!.history.at(-1)).toMatchObject({
        actor: "operator:tester",
        action: "retry",
        note: "chat is back",
      });

      const cancelled = await sb(
        "outbox",
        "cancel",
        seed.pending.outboxId!,
        "--json",
        "--actor",
        "operator:bob",
      );
      expect(cancelled.code).toBe(0);
      const shown = json<OutboxRecord>(cancelled);
      expect(shown).toEqual(asJson(await seed.stores.outbox.show(seed.pending.outboxId!)) as OutboxRecord);
      expect(shown.state).toBe("cancelled");
      expect(shown.history.at(-1)).toMatchObject({ actor: "operator:bob", action: "cancel" });

      // Without $USER or $LOGNAME (a container, a cron job) the actor is operator:cli.
      const anonymous = await cli(["outbox", "cancel", seed.failed.outboxId!, "--json"], {
        SWITCHBOARD_DB: dbPath,
        USER: "",
        LOGNAME: "",
      });
      expect(anonymous.code).toBe(0);
      expect(json<OutboxRecord>(anonymous).history.at(-1)).toMatchObject({
        actor: "operator:cli",
        action: "cancel",
      });

      expect((await sb("outbox", "cancel", seed.delivered.outboxId!)).code).toBe(4);
      expect((await sb("outbox", "retry", "obx_missing")).code).toBe(3);
    },
    TIMEOUT_MS,
  );

  test(
    "schedules pause, resume and cancel; a refused change exits 4",
    async () => {
      const { daily, cancelled } = seed.schedules;
      const paused = await sb("schedules", "pause", daily.id);
      expect(paused.code).toBe(0);
      expect(paused.stdout).toContain(`Schedule ${daily.id} is now paused`);
      expect((await seed.stores.schedules.get(daily.id))?.state).toBe("paused");
      const resumed = json<Schedule>(await sb("schedules", "resume", daily.id, "--json"));
      expect(resumed.state).toBe("active");
      expect((await sb("schedules", "cancel", daily.id)).code).toBe(0);
      const refused = await sb("schedules", "pause", cancelled.id);
      expect(refused.code).toBe(4);
      expect(refused.stderr).toContain("is cancelled; it cannot be paused");
    },
    TIMEOUT_MS,
  );
});

describe("the database file", () => {
  test(
    "a missing database exits 3 with what to do, and nothing is created",
    async () => {
      const missing = join(dir.path, "nowhere", "switchboard.sqlite");
      for (const args of [
        ["outbox", "list", "--db", missing],
        ["db", "backup", join(dir.path, "b.sqlite"), "--db", missing],
      ]) {
        const result = await cli(args);
        expect(result.code).toBe(3);
        expect(result.stderr).toContain(
          `No database at ${missing}. Start the gateway once (npm start) or run \`switchboard db migrate\`.`,
        );
      }
      const viaEnv = await cli(["schedules", "list"], { SWITCHBOARD_DB: missing });
      expect(viaEnv.code).toBe(3);
      expect(existsSync(join(dir.path, "nowhere"))).toBe(false);
      expect(existsSync(join(dir.path, "b.sqlite"))).toBe(false);
    },
    TIMEOUT_MS,
  );

  test(
    "db check --json reports the schema, integrity and counts",
    async () => {
      const checked = await sb("db", "check", "--json");
      expect(checked.code).toBe(0);
      const report = json<DatabaseCheck>(checked);
      expect(report).toEqual(checkDatabase(seed.stores.db));
      expect(report).toMatchObject({ ok: true, integrity: "ok", schemaVersion: EXPECTED_SCHEMA_VERSION });
      expect(report.counts.outbox.ambiguous).toBe(1);
      const quick = await sb("db", "check", "--quick");
      expect(quick.stdout).toMatch(/result:\s+ok/);
    },
    TIMEOUT_MS,
  );

  test(
    "db backup writes a copy that opens, and refuses to overwrite",
    async () => {
      const target = join(dir.path, "backups", "2026-03-01.sqlite");
      const backup = await sb("db", "backup", target, "--json");
      expect(backup.code).toBe(0);
      expect(json(backup)).toMatchObject({ path: target });
      const copy = openExistingStores(target);
      try {
        expect(checkDatabase(copy.db).counts).toEqual(checkDatabase(seed.stores.db).counts);
        expect((await copy.outbox.show(seed.ambiguous.outboxId!))?.markdown).toBe(
          "Action items: ship the CLI.",
        );
      } finally {
        copy.close();
      }
      const again = await sb("db", "backup", target);
      expect(again.code).toBe(4);
      expect(again.stderr).toContain("already exists; a backup never overwrites a file");
    },
    TIMEOUT_MS,
  );

  test(
    "db migrate creates a database; an old schema is refused until migrated",
    async () => {
      const fresh = join(dir.path, "fresh", "switchboard.sqlite");
      const created = await cli(["db", "migrate", "--db", fresh, "--json"]);
      expect(created.code).toBe(0);
      expect(json(created)).toEqual({ path: fresh, fromVersion: 0, toVersion: EXPECTED_SCHEMA_VERSION });
      expect((await cli(["runs", "list", "--db", fresh])).stdout).toBe("No runs match.\n");

      const old = join(dir.path, "old.sqlite");
      openDatabase({ filename: old, migrations: MIGRATIONS.slice(0, 2) }).close();
      const refused = await cli(["outbox", "list", "--db", old]);
      expect(refused.code).toBe(4);
      expect(refused.stderr).toContain("has schema version 2");
      expect(refused.stderr).toContain("switchboard db migrate");
      expect((await cli(["db", "check", "--db", old])).code).toBe(4);
      const migrated = await cli(["db", "migrate", "--db", old]);
      expect(migrated.stdout).toBe(
        `Database ${old} is at schema version ${EXPECTED_SCHEMA_VERSION} (was 2).\n`,
      );
      expect((await cli(["outbox", "list", "--db", old])).code).toBe(0);
    },
    TIMEOUT_MS,
  );
});
