import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { OutboxRecord } from "../../outbox/types.ts";
import { createOperatorService, type OperatorService } from "../../src/operator/service.ts";
import { systemClock } from "../../src/util/clock.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { cli, json } from "./support/cli.ts";
import { type FakeGateway, startFakeGateway } from "./support/fake-gateway.ts";

const TOKEN = "op-token-5f0c9a7e-secret";
// Each test spawns up to six CLI processes; the margin is for a loaded machine.
const TIMEOUT_MS = 20_000;

let dir: ReturnType<typeof tempDir>;
let seed: Seed;
let operator: OperatorService;
let gateway: FakeGateway;
let workerNudges: number;

beforeEach(async () => {
  dir = tempDir("switchboard-cli-api-");
  seed = await seedDatabase(join(dir.path, "switchboard.sqlite"));
  workerNudges = 0;
  operator = createOperatorService({
    stores: seed.stores,
    clock: systemClock,
    onOutboxChanged: () => {
      workerNudges += 1;
    },
  });
  gateway = startFakeGateway({ operator, token: TOKEN });
});

afterEach(async () => {
  await gateway.stop();
  seed.stores.close();
  dir.cleanup();
});

/** The CLI in API mode: SWITCHBOARD_URL and the token set, no database configured at all. */
const api = (args: string[], token = TOKEN) =>
  cli(args, { SWITCHBOARD_URL: gateway.url, SWITCHBOARD_OPERATOR_TOKEN: token });
const asJson = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe("API mode", () => {
  test(
    "reads go to the operator API with the token and the contract's query names",
    async () => {
      const outbox = await api(["outbox", "list", "--state", "ambiguous", "--limit", "5", "--json"]);
      expect(outbox.code).toBe(0);
      expect(json(outbox)).toEqual(asJson((await operator.outbox.list({ state: "ambiguous" })).items));
      expect(gateway.requests.at(-1)).toMatchObject({
        method: "GET",
        path: "/api/outbox",
        query: { state: "ambiguous", limit: "5" },
        authorization: `Bearer ${TOKEN}`,
      });

      const id = seed.telegram.conversationId;
      const first = await operator.conversations.show(id, { limit: 2 });
      const cursor = first!.nextCursor!;
      const page = await api(["conversations", "show", id, "--cursor", cursor, "--limit", "2", "--json"]);
      expect(json(page)).toEqual(asJson(await operator.conversations.show(id, { cursor, limit: 2 })));
      expect(gateway.requests.at(-1)).toMatchObject({
        path: `/api/conversations/${id}`,
        query: { cursor, limit: "2" },
      });

      const matching = await api(["conversations", "list", "-q", seed.slack.key, "--limit", "5", "--json"]);
      expect(json(matching)).toEqual(
        asJson((await operator.conversations.list({ query: seed.slack.key })).items),
      );
      expect(gateway.requests.at(-1)).toMatchObject({
        path: "/api/conversations",
        query: { q: seed.slack.key, limit: "5" },
      });

      // --all follows nextCursor page by page; the JSON is the whole list, as without paging.
      const everyRun = await api(["runs", "list", "--limit", "2", "--all", "--json"]);
      expect(json(everyRun)).toEqual(asJson((await operator.runs.list({})).items));
      expect(gateway.requests.slice(-3).map((r) => r.query.cursor === undefined)).toEqual([
        true,
        false,
        false,
      ]);
      const firstPage = await api(["runs", "list", "--limit", "2"]);
      expect(firstPage.stdout).toContain(
        `More: repeat with --cursor ${(await operator.runs.list({ limit: 2 })).nextCursor} (or --all).`,
      );

      const runs = await api(["runs", "list", "--conversation", seed.slack.conversationId]);
      expect(runs.stdout).toContain(seed.failed.runId);
      expect(gateway.requests.at(-1)?.query).toEqual({ conversation: seed.slack.conversationId });

      const schedules = await api(["schedules", "list", "--all", "--json"]);
      expect(json(schedules)).toEqual(asJson(await operator.schedules.list({ includeEnded: true })));
      expect(gateway.requests.at(-1)?.query).toEqual({ all: "1" });

      const byKey = await api(["outbox", "show", `${seed.failed.runId}:0`, "--json"]);
      expect(json<OutboxRecord>(byKey).id).toBe(seed.failed.outboxId!);
    },
    TIMEOUT_MS,
  );

  test(
    "outbox resolve goes through the gateway, which records the actor and wakes its worker",
    async () => {
      const resolved = await api([
        "outbox",
        "resolve",
        seed.ambiguous.outboxId!,
        "--delivered",
        "--note",
        "visible in the chat",
        "--actor",
        "ann",
      ]);
      expect(resolved.code).toBe(0);
      expect(resolved.stdout).toContain("is now delivered");
      expect(gateway.requests.at(-1)).toEqual({
        method: "POST",
        path: `/api/outbox/${seed.ambiguous.outboxId}/resolve`,
        query: {},
        authorization: `Bearer ${TOKEN}`,
        actor: "ann",
        body: { outcome: "delivered", note: "visible in the chat" },
      });
      const record = await seed.stores.outbox.show(seed.ambiguous.outboxId!);
      expect(record?.state).toBe("delivered");
      expect(record?.history.at(-1)).toMatchObject({
        actor: "operator:ann",
        action: "resolve delivered",
        note: "visible in the chat",
      });
      expect(workerNudges).toBe(1);

      const retried = await api(["outbox", "retry", seed.failed.outboxId!, "--json"]);
      expect(json<OutboxRecord>(retried).state).toBe("pending");
      expect(gateway.requests.at(-1)).toMatchObject({ actor: "tester", body: {} });
      expect(workerNudges).toBe(2);

      const paused = await api(["schedules", "pause", seed.schedules.daily.id]);
      expect(paused.stdout).toContain("is now paused");
      expect(gateway.requests.at(-1)).toMatchObject({
        method: "POST",
        path: `/api/schedules/${seed.schedules.daily.id}/pause`,
      });
    },
    TIMEOUT_MS,
  );

  test(
    "access approve, list and revoke go through the gateway with the actor; refusals keep their exit codes",
    async () => {
      const issued = await seed.stores.access.issuePairingCode({
        channel: "telegram",
        userId: "555",
        updateKey: "bot1:77",
        candidate: "MNPQRSTU",
        nowMs: Date.now(),
      });
      expect(issued.outcome).toBe("issued");
      const approved = await api(["access", "approve", "mnpq rstu", "--actor", "ann"]);
      expect(approved.code).toBe(0);
      expect(approved.stdout).toContain("operator:ann");
      expect(gateway.requests.at(-1)).toMatchObject({
        method: "POST",
        path: "/api/access/approve",
        actor: "ann",
        body: { code: "mnpq rstu" },
      });
      expect(await seed.stores.access.isGranted("telegram", "555")).toBe(true);
      expect((await api(["access", "approve", "MNPQRSTU"])).code).toBe(4);
      expect((await api(["access", "approve", "WXYZ2345"])).code).toBe(3);

      const listed = await api(["access", "list"]);
      expect(listed.stdout).toContain("555");
      const revoked = await api(["access", "revoke", "telegram", "555"]);
      expect(revoked.code).toBe(0);
      expect(gateway.requests.at(-1)).toMatchObject({
        method: "POST",
        path: "/api/access/telegram/555/revoke",
      });
      expect(await seed.stores.access.isGranted("telegram", "555")).toBe(false);
      expect((await api(["access", "revoke", "telegram", "555"])).code).toBe(3);
    },
    TIMEOUT_MS,
  );

  test(
    "the gateway's refusals keep their exit codes: not found 3, refused 4",
    async () => {
      const missing = await api(["outbox", "show", "obx_missing", "--json"]);
      expect(missing).toMatchObject({ code: 3, stdout: "" });
      expect((await api(["schedules", "pause", "sch_missing"])).code).toBe(3);
      expect((await api(["runs", "show", "run_missing"])).code).toBe(3);

      const refused = await api(["outbox", "cancel", seed.delivered.outboxId!]);
      expect(refused.code).toBe(4);
      expect(refused.stderr).toContain("is delivered and cannot become cancelled");
      expect(workerNudges).toBe(0);
    },
    TIMEOUT_MS,
  );

  test(
    "a wrong token is refused with exit 4 and is never printed",
    async () => {
      const wrong = "wrong-token-77aa31";
      const result = await api(["outbox", "list"], wrong);
      expect(result.code).toBe(4);
      expect(result.stdout).toBe("");
      expect(result.stderr).toContain(`The gateway at ${gateway.url} refused the operator token (HTTP 401).`);
      expect(result.stderr).toContain("Set SWITCHBOARD_OPERATOR_TOKEN");
      expect(result.stderr).not.toContain(wrong);
      expect(gateway.requests.at(-1)?.authorization).toBe(`Bearer ${wrong}`);
    },
    TIMEOUT_MS,
  );

  test(
    "an unreachable gateway exits 1 and says how to work on the file instead",
    async () => {
      await gateway.stop();
      const result = await api(["runs", "list"]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`Could not reach the gateway at ${gateway.url}`);
      expect(result.stderr).toContain("pass --db PATH");
    },
    TIMEOUT_MS,
  );
});
