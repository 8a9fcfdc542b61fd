/**
 * OpenTelemetry end to end: real gateway processes export OTLP/JSON to a receiver in this test
 * process. A plain run is one trace from ingress to delivery with the AI SDK's GenAI spans in its
 * step; a tool call that waited for approval carries the decision and the wait; a run SIGKILLed
 * mid tool call and resumed by the next process stays one trace, its two attempts linked. No
 * secret and, by default, no content appears anywhere in what was exported.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually, GATEWAY_START_TIMEOUT_MS, type GatewayProcess } from "./support/gateway-process.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "fixtures", "mcp", "stdio-server.ts");
const fixture = useE2eFixture("switchboard-e2e-telemetry-", startTelegramEmulator);
const { dir, llm, platform: telegram } = fixture;
const alice = user(1001, "Alice");
const notes = join(dir.path, "notes.txt");
const TIMEOUT = 20_000;

const receiver: OtlpReceiver = startOtlpReceiver();
afterAll(() => receiver.stop());
fixture.stopGatewaysAfterEach();

const SECRETS = {
  OPENAI_COMPATIBLE_API_KEY: "sk-model-key-telemetry-0123456789",
  SWITCHBOARD_OPERATOR_TOKEN: "operator-token-telemetry-0123456789",
  SWITCHBOARD_METRICS_TOKEN: "metrics-token-telemetry-0123456789",
  SWITCHBOARD_APPROVAL_SECRET: "approval-secret-telemetry-0123456789",
};
const OTLP_HEADER_SECRET = "otlp-header-secret-0123456789";

function env(
  extra: Record<string, string> = {},
  dm: Record<string, unknown> = { delivery: "terminal", inputPolicy: "queue" },
): Record<string, string> {
  const config = join(dir.path, "switchboard.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces: { "telegram:dm": dm },
      mcpServers: {
        notes: { command: process.execPath, args: [STDIO_SERVER], env: { NOTES_FILE: notes } },
        quick: {
          command: process.execPath,
          args: [STDIO_SERVER],
          env: { NOTES_FILE: notes },
          approval: "never",
        },
      },
    }),
  );
  return {
    ...telegramGatewayEnv(fixture, { allowed: [alice.id] }),
    SWITCHBOARD_CONFIG: config,
    ...SECRETS,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_HEADERS: `x-collector-auth=${OTLP_HEADER_SECRET}`,
    OTEL_SERVICE_NAME: "switchboard-e2e",
    OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
    // Spans leave within 50 ms of ending, so what a SIGKILLed process had ended is exported.
    OTEL_BSP_SCHEDULE_DELAY: "50",
    OTEL_METRIC_EXPORT_INTERVAL: "300",
    ...extra,
  };
}

const start = (extra?: Record<string, string>, dm?: Record<string, unknown>): Promise<GatewayProcess> =>
  fixture.startGateway(env(extra, dm), GATEWAY_START_TIMEOUT_MS);

const byName = (spans: readonly ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const child = (spans: readonly ReceivedSpan[], parent: ReceivedSpan, name: string) =>
  spans.find((s) => s.parentSpanId === parent.spanId && s.name === name);

/** The spans of the trace whose run span has `runId`, once `done` holds for them. */
async function traceOf(
  predicate: (span: ReceivedSpan) => boolean,
  done: (spans: ReceivedSpan[]) => boolean,
): Promise<ReceivedSpan[]> {
  return await eventually(
    () => {
      const anchor = receiver.spans().find(predicate);
      if (!anchor) return undefined;
      const spans = receiver.spans().filter((s) => s.traceId === anchor.traceId);
      return done(spans) ? spans : undefined;
    },
    TIMEOUT,
    "the trace's spans to be exported",
  );
}

/** Every string in everything exported: none may hold a secret or (by default) content. */
function expectNothingOf(values: readonly string[]): void {
  const exported = receiver.bodies().join("\n");
  for (const value of values) expect(exported).not.toContain(value);
}

test("a plain run is one trace: ingress, admission, run, step with the GenAI spans, delivery; metrics under their Prometheus names", async () => {
  const gateway = await start();
  llm.setRules([
    {
      match: { lastUserContains: "plain-run-marker" },
      reply: { kind: "text", text: "Reply zebra-content-42" },
    },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "tell me about plain-run-marker" });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("zebra-content-42"),
    TIMEOUT,
  );

  const spans = await traceOf(
    (s) => s.name === "switchboard.ingress",
    (all) => byName(all, "switchboard.delivery").length > 0,
  );
  const ingress = byName(spans, "switchboard.ingress")[0]!;
  expect(ingress.parentSpanId).toBe("");
  expect(ingress.attributes).toMatchObject({
    "switchboard.channel": "telegram",
    "switchboard.surface": "telegram:dm",
    "switchboard.ingress.outcome": "admitted",
  });
  expect(ingress.resource["service.name"]).toBe("switchboard-e2e");
  expect(ingress.resource["deployment.environment"]).toBe("test");
  const admission = child(spans, ingress, "switchboard.admission")!;
  expect(admission.attributes["switchboard.admission.outcome"]).toBe("admitted");
  const runId = admission.attributes["switchboard.run.id"];
  const run = child(spans, admission, "switchboard.run")!;
  expect(run.attributes).toMatchObject({
    "switchboard.run.id": runId,
    "switchboard.run.attempt": 1,
    "switchboard.run.state": "completed",
    "switchboard.channel": "telegram",
  });
  const step = child(spans, run, "switchboard.step")!;
  expect(step.attributes["switchboard.step.outcome"]).toBe("ok");
  // The AI SDK's own spans (GenAI semantic conventions) nest in the step.
  const agent = child(spans, step, "invoke_agent test-model")!;
  expect(agent.attributes).toMatchObject({
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.request.model": "test-model",
  });
  const modelCall = spans.find((s) => s.name === "chat test-model")!;
  expect(spans.find((s) => s.spanId === modelCall.parentSpanId)?.parentSpanId).toBe(agent.spanId);
  expect(modelCall.attributes).toMatchObject({
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "test-model",
    "gen_ai.response.finish_reasons": ["stop"],
  });
  expect(modelCall.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
  expect(modelCall.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
  const delivery = child(spans, run, "switchboard.delivery")!;
  expect(delivery.attributes).toMatchObject({
    "switchboard.delivery.state": "delivered",
    "switchboard.delivery.attempts": 1,
  });
  expect((delivery.attributes["switchboard.delivery.receipt"] as string[]).length).toBe(1);

  // The same counters as /metrics, under the same names.
  const exposition = await (
    await fetch(`${gateway.url}/metrics`, {
      headers: { authorization: `Bearer ${SECRETS.SWITCHBOARD_METRICS_TOKEN}` },
    })
  ).text();
  const samples = exposition
    .split("\n")
    .filter((line) => line.startsWith("switchboard_inbound_accepted_total{"))
    .map((line) => {
      const [series, value] = line.split(" ");
      const labels = Object.fromEntries(
        [...series!.matchAll(/(\w+)="([^"]*)"/g)].map(([, key, labelValue]) => [key!, labelValue!]),
      );
      return { labels, value: Number(value) };
    });
  expect(samples.find((sample) => sample.labels.channel === "telegram")?.value).toBeGreaterThan(0);
  await eventually(
    () => {
      const points = receiver.metrics().get("switchboard_inbound_accepted_total")?.points ?? [];
      return samples.every((sample) =>
        points.some((p) => Bun.deepEquals(p.attributes, sample.labels) && p.value === sample.value),
      );
    },
    TIMEOUT,
    "the same counter values through OTLP",
  );
  const stages = receiver.metrics().get("switchboard_reply_stage_ms");
  expect(stages?.kind).toBe("histogram");

  expectNothingOf([
    "plain-run-marker",
    "zebra-content-42",
    telegram.token,
    ...Object.values(SECRETS),
    OTLP_HEADER_SECRET,
  ]);
}, 60_000);

test("a tool call that waited for approval: the asking run ends awaiting it, the next runs the call with the decision, its wait and a link back", async () => {
  await start();
  llm.setRules([
    {
      match: { lastUserContains: "approval-marker", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_append_note", input: { text: "tea" } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Done: {{lastToolResult}}" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "please note approval-marker" });
  const prompt = await telegram.waitForMessage(
    alice.id,
    (m) => m.visibleText.includes("Approval needed") && !!m.buttons,
    TIMEOUT,
  );
  telegram.press(alice.id, prompt.messageId, alice, { label: "Approve" });
  await telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText.startsWith("Done:"), TIMEOUT);

  const tool = await eventually(
    () =>
      receiver
        .spans()
        .find((s) => s.name === "execute_tool notes_append_note" && s.attributes["switchboard.approval.id"]),
    TIMEOUT,
    "the approved call's span",
  );
  expect(tool.attributes).toMatchObject({
    "gen_ai.tool.name": "notes_append_note",
    "switchboard.tool.outcome": "completed",
    "switchboard.tool.attempt": 1,
    "switchboard.approval.decision": "approved",
  });
  expect(tool.attributes["switchboard.approval.wait_ms"]).toBeGreaterThanOrEqual(0);
  const successor = receiver.spans().find((s) => s.spanId === tool.parentSpanId)!;
  expect(successor.name).toBe("switchboard.run");
  expect(successor.attributes["switchboard.run.state"]).toBe("completed");
  // The run that asked ended at the approval; the call's span links to its trace.
  const asking = receiver
    .spans()
    .find(
      (s) => s.name === "switchboard.run" && s.attributes["switchboard.run.state"] === "awaiting_approval",
    )!;
  const link = tool.links.find((l) => l.attributes["switchboard.link"] === "approval_request")!;
  expect(link.attributes["switchboard.run.id"]).toBe(asking.attributes["switchboard.run.id"]!);
  expect(link.traceId).toBe(asking.traceId);
  expectNothingOf(["approval-marker", "tea", ...Object.values(SECRETS), OTLP_HEADER_SECRET]);
}, 60_000);

test("a run SIGKILLed during a tool call and resumed by the next process is one trace with two linked attempts", async () => {
  llm.setRules([
    {
      match: { lastUserContains: "crash-marker", lastRole: "user" },
      reply: { kind: "tool-call", toolName: "quick_slow_append", input: { text: "risky", ms: 4000 } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Answer: {{lastToolResult}}" } },
  ]);
  const first = await start();
  const before = new Set(receiver.spans().map((s) => s.spanId));
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "do the crash-marker write" });
  await eventually(
    () => existsSync(notes) && readFileSync(notes, "utf8").includes("begin risky"),
    TIMEOUT,
    "the tool to begin",
  );
  // The first step's span has left the killed process (it ended before the call began).
  const firstStep = await eventually(
    () => receiver.spans().find((s) => s.name === "switchboard.step" && !before.has(s.spanId)),
    TIMEOUT,
    "the first attempt's step span",
  );
  await first.kill("SIGKILL");
  await start();
  await telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText.includes("Answer:"), TIMEOUT);

  const spans = await traceOf(
    (s) => s.spanId === firstStep.spanId,
    (all) => byName(all, "switchboard.delivery").length > 0,
  );
  const admission = byName(spans, "switchboard.admission")[0]!;
  const runId = admission.attributes["switchboard.run.id"];
  const attempts = byName(spans, "switchboard.run").filter(
    (s) => s.attributes["switchboard.run.id"] === runId,
  );
  // The killed attempt's run span never ended, so never left; its step did, under its id.
  expect(attempts).toHaveLength(1);
  const resumed = attempts[0]!;
  expect(resumed.parentSpanId).toBe(admission.spanId);
  expect(resumed.attributes).toMatchObject({ "switchboard.run.attempt": 2, "switchboard.run.resumed": true });
  expect(resumed.links).toHaveLength(1);
  const lost = resumed.links[0]!;
  expect(lost.attributes).toMatchObject({
    "switchboard.link": "previous_attempt",
    "switchboard.run.attempt": 1,
  });
  expect(lost.traceId).toBe(resumed.traceId);
  expect(firstStep.parentSpanId).toBe(lost.spanId);
  expect(firstStep.traceId).toBe(resumed.traceId);
  const tool = child(spans, resumed, "execute_tool quick_slow_append")!;
  expect(tool.attributes["switchboard.tool.outcome"]).toBe("unknown");
  expect(child(spans, resumed, "switchboard.delivery")?.attributes["switchboard.delivery.state"]).toBe(
    "delivered",
  );
  expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
  expectNothingOf(["crash-marker", "risky", ...Object.values(SECRETS), OTLP_HEADER_SECRET]);
}, 60_000);

test("with SWITCHBOARD_TRACE_CONTENT=on, prompts and answers are on the spans; secrets still never are", async () => {
  await start({ SWITCHBOARD_TRACE_CONTENT: "on" });
  llm.setRules([
    { match: { lastUserContains: "content-marker" }, reply: { kind: "text", text: "Reply okapi-content-7" } },
  ]);
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "say content-marker please" });
  await telegram.waitForMessage(
    alice.id,
    (m) => m.fromBot && m.visibleText.includes("okapi-content-7"),
    TIMEOUT,
  );
  await eventually(
    () => {
      const exported = receiver.bodies().join("\n");
      return exported.includes("content-marker") && exported.includes("okapi-content-7");
    },
    TIMEOUT,
    "the prompt and the answer on the spans",
  );
  expectNothingOf([telegram.token, ...Object.values(SECRETS), OTLP_HEADER_SECRET]);
}, 60_000);

test("a streamed reply's delivery is one span under its run, from the first preview to the final edit", async () => {
  await start({}, { delivery: "stream" });
  llm.setRules([
    {
      match: { lastUserContains: "stream-marker" },
      reply: { kind: "text", text: "one two three four five six", chunks: 6, chunkDelayMs: 150 },
    },
  ]);
  const before = new Set(receiver.spans().map((s) => s.spanId));
  telegram.incoming({ chat: privateChat(alice), from: alice, text: "stream-marker please" });
  await telegram.waitForMessage(alice.id, (m) => m.fromBot && m.visibleText.includes("six"), TIMEOUT);
  const delivery = await eventually(
    () =>
      receiver
        .spans()
        .find(
          (s) =>
            !before.has(s.spanId) &&
            s.name === "switchboard.delivery" &&
            s.attributes["switchboard.outbox.kind"] === "stream",
        ),
    TIMEOUT,
    "the stream's delivery span",
  );
  expect(delivery.attributes).toMatchObject({ "switchboard.delivery.state": "delivered" });
  expect((delivery.attributes["switchboard.delivery.receipt"] as string[]).length).toBeGreaterThan(0);
  const run = receiver.spans().find((s) => s.spanId === delivery.parentSpanId)!;
  expect(run.name).toBe("switchboard.run");
  expect(run.attributes["switchboard.run.id"]).toBe(delivery.attributes["switchboard.run.id"]!);
  // The preview began while the run was still answering.
  expect(delivery.startMs).toBeLessThan(run.endMs);
}, 60_000);
