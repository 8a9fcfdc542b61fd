import { expect, test } from "bun:test";
import { attemptSpanId, runTraceId } from "../../src/telemetry/attempt-ids.ts";
import { otlpHeaderValues, otlpTarget, readTelemetryConfig } from "../../src/telemetry/config.ts";
import { parseTraceParent, toTraceParent } from "../../src/telemetry/spans.ts";

test("off without an OTLP endpoint, or with OTEL_SDK_DISABLED=true", () => {
  expect(readTelemetryConfig({})).toBeNull();
  expect(readTelemetryConfig({ OTEL_SERVICE_NAME: "x", SWITCHBOARD_TRACE_CONTENT: "on" })).toBeNull();
  expect(
    readTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }),
  ).toBeNull();
});

test("on with an endpoint: protobuf by default, content off unless SWITCHBOARD_TRACE_CONTENT=on", () => {
  expect(readTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({
    content: false,
    protocol: "http/protobuf",
    traces: true,
    metrics: true,
  });
  expect(
    readTelemetryConfig({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://tempo:4318/v1/traces",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_METRICS_EXPORTER: "none",
      SWITCHBOARD_TRACE_CONTENT: "on",
    }),
  ).toEqual({ content: true, protocol: "http/json", traces: true, metrics: false });
});

test("a signal without an endpoint of its own or a shared one is not exported", () => {
  expect(
    readTelemetryConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://tempo:4318/v1/traces" }),
  ).toMatchObject({
    traces: true,
    metrics: false,
  });
  expect(
    readTelemetryConfig({
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://prometheus:9090/api/v1/otlp/v1/metrics",
    }),
  ).toMatchObject({ traces: false, metrics: true });
  expect(
    readTelemetryConfig({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://tempo:4318/v1/traces",
      OTEL_TRACES_EXPORTER: "none",
    }),
  ).toBeNull();
});

test("values it cannot honour are refused, naming the variable and the fix", () => {
  expect(() =>
    readTelemetryConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317",
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
    }),
  ).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf or http\/json \(got "grpc"\)/);
  expect(() => readTelemetryConfig({ SWITCHBOARD_TRACE_CONTENT: "yes" })).toThrow(
    /SWITCHBOARD_TRACE_CONTENT must be on or off/,
  );
});

test("the OTLP headers' values are secrets (kept out of logs), decoded and not", () => {
  expect(
    otlpHeaderValues({ OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Basic%20cGs6c2s=,x-scope=tenant-1" }),
  ).toEqual(["Basic%20cGs6c2s=", "Basic cGs6c2s=", "tenant-1", "tenant-1"]);
});

test("an attempt's span id is the same in every process, and differs per attempt and run", () => {
  expect(attemptSpanId("run_a", 1)).toBe(attemptSpanId("run_a", 1));
  expect(attemptSpanId("run_a", 1)).toMatch(/^[0-9a-f]{16}$/);
  expect(attemptSpanId("run_a", 2)).not.toBe(attemptSpanId("run_a", 1));
  expect(attemptSpanId("run_b", 1)).not.toBe(attemptSpanId("run_a", 1));
  expect(runTraceId("run_a")).toMatch(/^[0-9a-f]{32}$/);
});

test("a stored traceparent reads back as the span context it was written from; anything else is ignored", () => {
  const context = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 };
  const traceparent = toTraceParent({ ...context, isRemote: false });
  expect(traceparent).toBe("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  expect(parseTraceParent(traceparent)).toEqual({ ...context, isRemote: true });
  expect(parseTraceParent("00-00000000000000000000000000000000-b7ad6b7169203331-01")).toBeNull();
  expect(parseTraceParent("garbage")).toBeNull();
  expect(parseTraceParent(undefined)).toBeNull();
});

test("each signal's URL and headers follow the OTLP variables", () => {
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: "https://cloud.langfuse.com/api/public/otel/",
    OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Basic%20cGs6c2s=,x-langfuse-ingestion-version=4",
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://mimir:9009/otlp/v1/metrics",
    OTEL_EXPORTER_OTLP_METRICS_HEADERS: "X-Scope-OrgID=team-a",
  };
  expect(otlpTarget(env, "traces")).toEqual({
    url: "https://cloud.langfuse.com/api/public/otel/v1/traces",
    headers: { Authorization: "Basic cGs6c2s=", "x-langfuse-ingestion-version": "4" },
  });
  expect(otlpTarget(env, "metrics")).toEqual({
    url: "http://mimir:9009/otlp/v1/metrics",
    headers: {
      Authorization: "Basic cGs6c2s=",
      "x-langfuse-ingestion-version": "4",
      "X-Scope-OrgID": "team-a",
    },
  });
  expect(otlpTarget({}, "traces").url).toBe("http://localhost:4318/v1/traces");
});
