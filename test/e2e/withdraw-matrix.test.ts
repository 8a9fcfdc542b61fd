/**
 * A user redacting their message on Matrix, end to end in this process: the Matrix adapter against
 * the homeserver emulator, the fake model server, SQLite on a temp file. A queued answer is
 * cancelled before its model call, a running one stops, and a redaction delivered again (a sync
 * replay) changes nothing.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../../src/util/clock.ts";
import { startMatrixEmulator } from "../emulators/matrix/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, GATEWAY_STOP_TIMEOUT_MS } from "./support/gateway-process.ts";
import { withdrawalChecks } from "./support/withdrawal.ts";

const fixture = useE2eFixture("switchboard-e2e-withdraw-mx-", () => startMatrixEmulator());
const { dir, llm, platform: mx } = fixture;
const alice = mx.createUser("alice").userId;
const TIMEOUT = 10_000;

const configFile = join(dir.path, "withdraw.json");
writeFileSync(
  configFile,
  JSON.stringify({ version: 1, surfaces: { "matrix:dm": { inputPolicy: "queue", delivery: "terminal" } } }),
);
const env = () =>
  e2eGatewayEnv({
    dir: dir.path,
    llm,
    extra: {
      SWITCHBOARD_CONFIG: configFile,
      MATRIX_HOMESERVER_URL: mx.url,
      MATRIX_ACCESS_TOKEN: mx.bot.token,
      MATRIX_ALLOWED_USERS: alice,
    },
  });

describe("redacting a message on Matrix", () => {
  let running: InProcessGateway | undefined;
  beforeAll(async () => {
    running = await startInProcessGateway(env(), { clock: systemClock, limits: FAST_PACING });
  }, GATEWAY_START_TIMEOUT_MS);
  afterAll(() => running?.stop({ graceMs: 0 }), GATEWAY_STOP_TIMEOUT_MS);

  const gateway = () => running!.gateway;
  const checks = withdrawalChecks(() => running!, "matrix");
  const { withdrawals, runOf } = checks;
  const source = () => `matrix:${mx.bot.userId}`;

  test("cancels the queued answer without a model call, stops the running one, once per redaction", async () => {
    const room = mx.createRoom(alice);
    await mx.waitFor(() => mx.membership(room, mx.bot.userId) === "join", TIMEOUT, "the bot's join");
    llm.setRules([{ match: { lastUserContains: "write an essay" }, reply: { kind: "hang" } }]);
    const essay = mx.sendText(room, alice, "write an essay");
    await eventually(
      async () => llm.requestsContaining("write an essay").length === 1,
      TIMEOUT,
      "the essay's model call",
    );
    const poem = mx.sendText(room, alice, "and a poem");
    await eventually(
      async () => (await gateway().stores.runtime.loadIngressReceipt(source(), poem)) !== null,
      TIMEOUT,
      "the poem to be admitted",
    );

    const poemRedaction = mx.redact(room, alice, poem);
    await eventually(async () => withdrawals().length === 1, TIMEOUT, "the poem's redaction");
    const cancelled = withdrawals()[0]!;
    expect(cancelled).toMatchObject({
      channel: "matrix",
      updateKey: poemRedaction,
      withdrawn: poem,
      effect: "cancelled",
    });
    expect(await runOf(String(cancelled.runId))).toMatchObject({
      state: "cancelled",
      stopReason: "withdrawn",
    });

    mx.redact(room, alice, essay);
    await checks.expectStopped(1, essay, "the essay's redaction");

    // The poem's redaction again, as a sync replay delivers it: a duplicate, nothing more happens.
    await checks.expectDuplicate(() => mx.redeliver(room, poemRedaction), "the replayed redaction");
    expect(llm.requestsContaining("and a poem")).toHaveLength(0);
  }, 30_000);
});
