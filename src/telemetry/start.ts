/**
 * Starts OpenTelemetry when an OTLP endpoint is configured. The SDK is imported only then: with
 * telemetry off no `@opentelemetry` module is loaded and the gateway does no tracing work at all
 * (the runtime, outbox and ingress get no tracer and call nothing).
 */
import type { Env } from "../util/env.ts";
import { readTelemetryConfig } from "./config.ts";
import type { Telemetry, TelemetryOptions } from "./telemetry.ts";

export type { Telemetry } from "./telemetry.ts";

/** The started telemetry, or null when no OTLP endpoint is set (nothing is loaded then). */
export async function startTelemetry(env: Env, options: TelemetryOptions): Promise<Telemetry | null> {
  const config = readTelemetryConfig(env);
  if (!config) return null;
  const { startOpenTelemetry } = await import("./otel.ts");
  return startOpenTelemetry(config, env, options);
}
