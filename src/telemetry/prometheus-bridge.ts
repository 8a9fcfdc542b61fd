/**
 * The Prometheus exposition (src/gateway/metrics.ts) as OpenTelemetry metric data: the same
 * names, labels and numbers through OTLP, read from the one render the `/metrics` route serves,
 * so the two can never disagree. Counters become cumulative monotonic sums, histograms keep their
 * buckets, and a summary's quantiles become gauges with a `quantile` attribute.
 */
import type { HrTime } from "@opentelemetry/api";
import {
  AggregationTemporality,
  DataPointType,
  type MetricData,
  type MetricProducer,
} from "@opentelemetry/sdk-metrics";

type Labels = Record<string, string>;

interface Sample {
  name: string;
  labels: Labels;
  value: number;
}

interface Family {
  name: string;
  help: string;
  type: string;
  samples: Sample[];
}

/** Parses the text format this gateway writes (one sample per line, label values without quotes). */
export function parseExposition(text: string): Family[] {
  const families = new Map<string, Family>();
  const familyOf = (name: string) => {
    let family = families.get(name);
    if (!family) {
      family = { name, help: "", type: "untyped", samples: [] };
      families.set(name, family);
    }
    return family;
  };
  let current: Family | null = null;
  for (const line of text.split("\n")) {
    if (line.startsWith("# HELP ")) {
      const rest = line.slice(7);
      const space = rest.indexOf(" ");
      familyOf(rest.slice(0, space)).help = rest.slice(space + 1);
      continue;
    }
    if (line.startsWith("# TYPE ")) {
      const [name, type] = line.slice(7).split(" ");
      current = familyOf(name!);
      current.type = type ?? "untyped";
      continue;
    }
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const [, name, rawLabels, rawValue] = match;
    const labels: Labels = {};
    for (const [, key, value] of (rawLabels ?? "").matchAll(/(\w+)="([^"]*)"/g)) labels[key!] = value!;
    const sample = { name: name!, labels, value: Number(rawValue) };
    // A histogram's and a summary's series carry suffixes of the family declared just before.
    const family = current && name!.startsWith(current.name) ? current : familyOf(name!);
    family.samples.push(sample);
  }
  return [...families.values()];
}

/** The exposition's families as OTel metric data, each point stamped `startTime`..`now`. */
export function toMetricData(families: readonly Family[], startTime: HrTime, now: HrTime): MetricData[] {
  const point = <T>(attributes: Labels, value: T) => ({ startTime, endTime: now, attributes, value });
  const descriptor = (name: string, help: string) => ({ name, description: help, unit: "", valueType: 1 });
  const data: MetricData[] = [];
  for (const family of families) {
    const { name, help, samples } = family;
    if (family.type === "counter") {
      data.push({
        descriptor: descriptor(name, help),
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.SUM,
        isMonotonic: true,
        dataPoints: samples.map((s) => point(s.labels, s.value)),
      });
    } else if (family.type === "histogram") {
      data.push({
        descriptor: descriptor(name, help),
        aggregationTemporality: AggregationTemporality.CUMULATIVE,
        dataPointType: DataPointType.HISTOGRAM,
        dataPoints: histogramPoints(name, samples).map((h) => point(h.labels, h.value)),
      });
    } else if (family.type === "summary") {
      const quantiles = samples.filter((s) => s.name === name);
      const count = samples.find((s) => s.name === `${name}_count`);
      data.push(
        gauge(
          descriptor(name, help),
          quantiles.map((s) => point(s.labels, s.value)),
        ),
      );
      if (count) data.push(gauge(descriptor(`${name}_count`, help), [point(count.labels, count.value)]));
    } else {
      data.push(
        gauge(
          descriptor(name, help),
          samples.map((s) => point(s.labels, s.value)),
        ),
      );
    }
  }
  return data;
}

function gauge(descriptor: MetricData["descriptor"], dataPoints: MetricData["dataPoints"]): MetricData {
  return {
    descriptor,
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.GAUGE,
    dataPoints: dataPoints as Array<{
      startTime: HrTime;
      endTime: HrTime;
      attributes: Labels;
      value: number;
    }>,
  };
}

/** Cumulative `_bucket{le}` series back into per-bucket counts, one histogram per label set. */
function histogramPoints(name: string, samples: readonly Sample[]) {
  const byLabels = new Map<
    string,
    { labels: Labels; bounds: Array<[number, number]>; sum: number; count: number }
  >();
  const entryOf = (labels: Labels) => {
    const { le: _le, ...rest } = labels;
    const key = JSON.stringify(rest);
    let entry = byLabels.get(key);
    if (!entry) {
      entry = { labels: rest, bounds: [], sum: 0, count: 0 };
      byLabels.set(key, entry);
    }
    return entry;
  };
  for (const sample of samples) {
    const entry = entryOf(sample.labels);
    if (sample.name === `${name}_bucket`) {
      const le = sample.labels.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(sample.labels.le);
      entry.bounds.push([le, sample.value]);
    } else if (sample.name === `${name}_sum`) entry.sum = sample.value;
    else if (sample.name === `${name}_count`) entry.count = sample.value;
  }
  return [...byLabels.values()].map((entry) => {
    const sorted = entry.bounds.sort((a, b) => a[0] - b[0]);
    const boundaries = sorted.filter(([le]) => Number.isFinite(le)).map(([le]) => le);
    const counts: number[] = [];
    let previous = 0;
    for (const [le, cumulative] of sorted) {
      counts.push(cumulative - previous);
      previous = cumulative;
      if (!Number.isFinite(le)) break;
    }
    // Without a +Inf bucket line, what lies above the last bound is the rest of the count.
    if (counts.length === boundaries.length) counts.push(entry.count - previous);
    return {
      labels: entry.labels,
      value: { buckets: { boundaries, counts }, sum: entry.sum, count: entry.count },
    };
  });
}

/** A producer the metric reader collects from: each export renders the exposition once. */
export function exposedMetrics(render: () => Promise<string>, startTime: HrTime): MetricProducer {
  return {
    async collect() {
      const scope = { name: "switchboard" };
      try {
        const families = parseExposition(await render());
        const now = hrNow();
        return {
          resourceMetrics: {
            resource: undefined as never,
            scopeMetrics: [{ scope, metrics: toMetricData(families, startTime, now) }],
          },
          errors: [],
        };
      } catch (error) {
        // The store may be closed (shutdown) or busy: this export has no gateway metrics.
        return { resourceMetrics: { resource: undefined as never, scopeMetrics: [] }, errors: [error] };
      }
    },
  };
}

export function hrNow(): HrTime {
  const ms = Date.now();
  return [Math.floor(ms / 1000), (ms % 1000) * 1_000_000];
}
