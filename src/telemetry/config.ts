/**
 * Whether OpenTelemetry is on, read from the standard `OTEL_*` variables. Pure and free of any
 * OpenTelemetry import: with telemetry off the gateway loads nothing more than this.
 */
import { type Env, fail, nonEmpty } from "../util/env.ts";

/** What the SDK module needs beyond what it reads from `OTEL_*` itself (endpoint, headers, sampler…). */
export interface TelemetryConfig {
  /** `SWITCHBOARD_TRACE_CONTENT=on`: prompts, answers and tool inputs and outputs go on spans. */
  content: boolean;
  /** The OTLP encoding: `OTEL_EXPORTER_OTLP_PROTOCOL` (default http/protobuf). */
  protocol: OtlpProtocol;
  /** Spans are exported: an endpoint for them is set, and `OTEL_TRACES_EXPORTER` is not `none`. */
  traces: boolean;
  /** Metrics are exported: an endpoint for them is set, and `OTEL_METRICS_EXPORTER` is not `none`. */
  metrics: boolean;
}

export type OtlpProtocol = "http/protobuf" | "http/json";

const ENDPOINT_VARIABLES = [
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
] as const;

/**
 * The telemetry configuration, or null when it is off: no OTLP endpoint is set, or
 * `OTEL_SDK_DISABLED=true`. Throws `config_invalid` for a value it cannot honour.
 */
export function readTelemetryConfig(env: Env): TelemetryConfig | null {
  const content = nonEmpty(env, "SWITCHBOARD_TRACE_CONTENT")?.toLowerCase();
  if (content !== undefined && content !== "on" && content !== "off")
    fail(
      "SWITCHBOARD_TRACE_CONTENT",
      `must be on or off (got "${content}")`,
      "SWITCHBOARD_TRACE_CONTENT=on to export prompts and answers on spans",
    );
  if (!ENDPOINT_VARIABLES.some((name) => nonEmpty(env, name) !== undefined)) return null;
  if (nonEmpty(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return null;
  const exported = (signal: "TRACES" | "METRICS") =>
    nonEmpty(env, `OTEL_${signal}_EXPORTER`)?.toLowerCase() !== "none" &&
    (nonEmpty(env, "OTEL_EXPORTER_OTLP_ENDPOINT") ??
      nonEmpty(env, `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`)) !== undefined;
  const traces = exported("TRACES");
  const metrics = exported("METRICS");
  if (!traces && !metrics) return null;
  return { content: content === "on", protocol: protocolOf(env), traces, metrics };
}

function protocolOf(env: Env): OtlpProtocol {
  for (const name of [
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
  ]) {
    const value = nonEmpty(env, name);
    if (value === undefined || value === "http/protobuf" || value === "http/json") continue;
    fail(
      name,
      `must be http/protobuf or http/json (got "${value}"): switchboard sends OTLP over HTTP, to port 4318 by default`,
      `${name}=http/protobuf`,
    );
  }
  return nonEmpty(env, "OTEL_EXPORTER_OTLP_PROTOCOL") === "http/json" ? "http/json" : "http/protobuf";
}

/**
 * The values of the OTLP headers (`OTEL_EXPORTER_OTLP_HEADERS=Authorization=Basic …`), which
 * carry the backend's credentials: kept out of logs like any other secret.
 */
export function otlpHeaderValues(env: Env): string[] {
  return [
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
  ]
    .flatMap((name) => nonEmpty(env, name)?.split(",") ?? [])
    .flatMap((pair) => {
      const at = pair.indexOf("=");
      const value = at < 0 ? "" : pair.slice(at + 1).trim();
      if (!value) return [];
      try {
        return [value, decodeURIComponent(value)];
      } catch {
        return [value];
      }
    });
}

/**
 * Where a signal is sent and with which headers, as the OTLP variables of `env` say: the
 * signal's own endpoint as it is, or the shared one with `/v1/<signal>` appended; the shared
 * headers, then the signal's own. Given to the exporters, so `env` alone decides (not whatever
 * the process environment holds).
 */
export function otlpTarget(
  env: Env,
  signal: "traces" | "metrics",
): { url: string; headers: Record<string, string> } {
  const upper = signal.toUpperCase();
  const own = nonEmpty(env, `OTEL_EXPORTER_OTLP_${upper}_ENDPOINT`);
  const shared = nonEmpty(env, "OTEL_EXPORTER_OTLP_ENDPOINT") ?? "http://localhost:4318";
  const url = own ?? `${shared.replace(/\/+$/, "")}/v1/${signal}`;
  const headers: Record<string, string> = {};
  for (const name of ["OTEL_EXPORTER_OTLP_HEADERS", `OTEL_EXPORTER_OTLP_${upper}_HEADERS`]) {
    for (const pair of nonEmpty(env, name)?.split(",") ?? []) {
      const at = pair.indexOf("=");
      if (at <= 0) continue;
      const value = pair.slice(at + 1).trim();
      try {
        headers[pair.slice(0, at).trim()] = decodeURIComponent(value);
      } catch {
        headers[pair.slice(0, at).trim()] = value;
      }
    }
  }
  return { url, headers };
}
