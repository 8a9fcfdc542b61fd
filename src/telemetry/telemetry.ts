import type { InboundMessage, IngressOutcome } from "../../channels/types.ts";
import type { OutboxRepository } from "../../outbox/types.ts";
import type { DeliveryTracing } from "../../outbox/worker.ts";
import type { RuntimeStore } from "../runtime/store.ts";
import type { RunTracing } from "../runtime/tracing.ts";
import type { Logger } from "../util/log.ts";

export interface Telemetry {
  /**
   * The spans of one gateway: ingress, admission, runs, steps, tool calls and deliveries; null
   * when only metrics are exported.
   */
  tracing(stores: { runtime: RuntimeStore; outbox: OutboxRepository }): GatewayTracing | null;
  /** Sends the Prometheus exposition's metrics through OTLP at each export interval. */
  exportMetrics(render: () => Promise<string>): void;
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

export interface TelemetryOptions {
  /** Values never exported (tokens, keys): replaced wherever they would appear on a span. */
  secrets: readonly string[];
  logger: Logger;
}

/** What the gateway wires in when telemetry is on (see src/telemetry/otel.ts). */
export interface GatewayTracing {
  runs: RunTracing;
  deliveries: DeliveryTracing;
  /** Handles one inbound update inside its `switchboard.ingress` span. */
  ingress(message: InboundMessage, handle: () => Promise<IngressOutcome>): Promise<IngressOutcome>;
}
