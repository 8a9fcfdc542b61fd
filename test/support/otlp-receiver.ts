/**
 * An OTLP/HTTP receiver in the test process: it accepts the JSON encoding
 * (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) on /v1/traces and /v1/metrics and keeps what it was
 * sent, flattened into spans and metric points a test can query.
 */

export type AttributeValue = string | number | boolean | AttributeValue[] | null;
export type Attributes = Record<string, AttributeValue>;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Attributes;
  links: Array<{ traceId: string; spanId: string; attributes: Attributes }>;
  events: Array<{ name: string; attributes: Attributes }>;
  status: { code?: number; message?: string };
  resource: Attributes;
  startMs: number;
  endMs: number;
}

export interface ReceivedMetric {
  name: string;
  kind: "sum" | "gauge" | "histogram";
  points: Array<{
    attributes: Attributes;
    value?: number;
    count?: number;
    sum?: number;
    bucketCounts?: number[];
  }>;
}

export interface OtlpReceiver {
  /** The base URL to set as OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans(): ReceivedSpan[];
  /** The latest export of each metric name. */
  metrics(): Map<string, ReceivedMetric>;
  /** Every request body it was sent, as received (for scans of everything exported). */
  bodies(): string[];
  stop(): Promise<void>;
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpAnyValue[] };
}

type OtlpKeyValue = { key: string; value: OtlpAnyValue };

function attributeValue(value: OtlpAnyValue | undefined): AttributeValue {
  if (!value) return null;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(attributeValue);
  return null;
}

function attributesOf(list: OtlpKeyValue[] | undefined): Attributes {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, attributeValue(kv.value)]));
}

const nanosToMs = (nanos: string | number | undefined) => Number(BigInt(nanos ?? 0) / 1_000_000n);

export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const metrics = new Map<string, ReceivedMetric>();
  const bodies: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (request.method !== "POST") return new Response("POST only", { status: 405 });
      if (!request.headers.get("content-type")?.includes("json"))
        return new Response("this receiver decodes OTLP/JSON only", { status: 415 });
      const text = await request.text();
      bodies.push(text);
      const body = JSON.parse(text);
      if (path === "/v1/traces") {
        for (const rs of body.resourceSpans ?? []) {
          const resource = attributesOf(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? "",
                name: s.name,
                kind: s.kind,
                attributes: attributesOf(s.attributes),
                links: (s.links ?? []).map(
                  (l: { traceId: string; spanId: string; attributes?: OtlpKeyValue[] }) => ({
                    traceId: l.traceId,
                    spanId: l.spanId,
                    attributes: attributesOf(l.attributes),
                  }),
                ),
                events: (s.events ?? []).map((e: { name: string; attributes?: OtlpKeyValue[] }) => ({
                  name: e.name,
                  attributes: attributesOf(e.attributes),
                })),
                status: s.status ?? {},
                resource,
                startMs: nanosToMs(s.startTimeUnixNano),
                endMs: nanosToMs(s.endTimeUnixNano),
              });
            }
          }
        }
        return Response.json({});
      }
      if (path === "/v1/metrics") {
        for (const rm of body.resourceMetrics ?? []) {
          for (const sm of rm.scopeMetrics ?? []) {
            for (const m of sm.metrics ?? []) {
              const kind = m.sum ? "sum" : m.gauge ? "gauge" : m.histogram ? "histogram" : null;
              if (!kind) continue;
              const points = (m[kind].dataPoints ?? []).map(
                (p: {
                  attributes?: OtlpKeyValue[];
                  asDouble?: number;
                  asInt?: string | number;
                  count?: string | number;
                  sum?: number;
                  bucketCounts?: Array<string | number>;
                }) => ({
                  attributes: attributesOf(p.attributes),
                  ...(p.asDouble !== undefined ? { value: p.asDouble } : {}),
                  ...(p.asInt !== undefined ? { value: Number(p.asInt) } : {}),
                  ...(p.count !== undefined ? { count: Number(p.count) } : {}),
                  ...(p.sum !== undefined ? { sum: p.sum } : {}),
                  ...(p.bucketCounts ? { bucketCounts: p.bucketCounts.map(Number) } : {}),
                }),
              );
              metrics.set(m.name, { name: m.name, kind, points });
            }
          }
        }
        return Response.json({});
      }
      return new Response("not found", { status: 404 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans: () => [...spans],
    metrics: () => new Map(metrics),
    bodies: () => [...bodies],
    async stop() {
      await server.stop(true);
    },
  };
}
