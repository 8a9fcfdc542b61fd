/**
 * The OpenTelemetry SDK for Node, started from the standard `OTEL_*` variables: OTLP over HTTP
 * (protobuf by default, JSON with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) for traces and metrics;
 * endpoint, headers, service name, resource attributes and sampler as the variables say.
 * Imported only by start.ts, and only when an endpoint is set.
 */
import { OpenTelemetry } from "@ai-sdk/otel";
import { type Attributes, DiagLogLevel, diag, trace } from "@opentelemetry/api";
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { envDetector, hostDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace";
import type { Env } from "../util/env.ts";
import { ChosenIdGenerator } from "./attempt-ids.ts";
import { otlpTarget, type TelemetryConfig } from "./config.ts";
import { exposedMetrics, hrNow } from "./prometheus-bridge.ts";
import { gatewaySpans } from "./spans.ts";
import type { Telemetry, TelemetryOptions } from "./telemetry.ts";

export function startOpenTelemetry(config: TelemetryConfig, env: Env, options: TelemetryOptions): Telemetry {
  const { logger } = options;
  diag.setLogger(
    {
      error: (message) => logger.warn("telemetry.error", { message }),
      warn: (message) => logger.warn("telemetry.warning", { message }),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    DiagLogLevel.WARN,
  );
  const json = config.protocol === "http/json";
  const ids = new ChosenIdGenerator();
  const traces = otlpTarget(env, "traces");
  const spanExporter = redacting(
    json ? new JsonTraceExporter(traces) : new ProtoTraceExporter(traces),
    options.secrets,
  );
  const metrics = otlpTarget(env, "metrics");
  let render: (() => Promise<string>) | null = null;
  const interval = positive(env, "OTEL_METRIC_EXPORT_INTERVAL", 60_000);
  const sdk = new NodeSDK({
    idGenerator: ids,
    // Lowest priority: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win.
    resource: resourceFromAttributes({ "service.name": "switchboard" }),
    resourceDetectors: [envDetector, hostDetector],
    instrumentations: [],
    spanProcessors: config.traces
      ? [
          new BatchSpanProcessor({
            exporter: spanExporter,
            scheduledDelayMillis: positive(env, "OTEL_BSP_SCHEDULE_DELAY", 5000),
            maxQueueSize: positive(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2048),
            maxExportBatchSize: positive(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
            exportTimeoutMillis: positive(env, "OTEL_BSP_EXPORT_TIMEOUT", 30_000),
          }),
        ]
      : [],
    metricReaders: config.metrics
      ? [
          new PeriodicExportingMetricReader({
            exporter: json ? new JsonMetricExporter(metrics) : new ProtoMetricExporter(metrics),
            exportIntervalMillis: interval,
            exportTimeoutMillis: Math.min(interval, positive(env, "OTEL_METRIC_EXPORT_TIMEOUT", 30_000)),
            metricProducers: [exposedMetrics(() => (render ? render() : Promise.resolve("")), hrNow())],
          }),
        ]
      : [],
  });
  sdk.start();
  const tracer = trace.getTracer("switchboard");
  const ai = new OpenTelemetry({ tracer });
  logger.info("telemetry.started", {
    protocol: config.protocol,
    metrics: config.metrics,
    content: config.content,
    ...(config.content
      ? { hint: "SWITCHBOARD_TRACE_CONTENT=on: prompts and answers are exported on spans" }
      : {}),
  });
  return {
    tracing: (stores) =>
      config.traces
        ? gatewaySpans({
            tracer,
            ids,
            ai,
            content: config.content,
            runtime: stores.runtime,
            outbox: stores.outbox,
          })
        : null,
    exportMetrics(renderMetrics) {
      render = renderMetrics;
    },
    async shutdown() {
      await sdk.shutdown().catch((error) => logger.warn("telemetry.shutdown_failed", { error }));
    },
  };
}

/** Replaces secret values wherever they would appear in an exported span's attributes. */
function redacting(exporter: SpanExporter, secrets: readonly string[]): SpanExporter {
  const values = secrets.filter((secret) => secret.length >= 6);
  if (values.length === 0) return exporter;
  const scrub = (attributes: Attributes | undefined) => {
    if (!attributes) return;
    for (const [key, value] of Object.entries(attributes)) {
      if (typeof value === "string") (attributes as Record<string, unknown>)[key] = redact(value, values);
      else if (Array.isArray(value))
        (attributes as Record<string, unknown>)[key] = value.map((v) =>
          typeof v === "string" ? redact(v, values) : v,
        );
    }
  };
  return {
    export(spans: ReadableSpan[], done) {
      for (const span of spans) {
        scrub(span.attributes);
        for (const event of span.events) scrub(event.attributes);
        for (const link of span.links) scrub(link.attributes);
      }
      exporter.export(spans, done);
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

function redact(text: string, secrets: readonly string[]): string {
  return secrets.reduce((redacted, secret) => redacted.split(secret).join("[redacted]"), text);
}

function positive(env: Env, name: string, fallback: number): number {
  const value = Number(env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}
