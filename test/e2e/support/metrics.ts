/**
 * Reads one sample from the gateway's Prometheus text at `${gatewayUrl}/metrics`, e.g.
 * `metricValue(url, "switchboard_inbound_duplicates_total", { channel: "slack" })`. Labels must
 * match exactly (same set, any order). A sample the gateway has not emitted yet counts as 0, as
 * counters that were never incremented are not rendered.
 */
export async function metricValue(
  gatewayUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const response = await fetch(`${gatewayUrl}/metrics`);
  if (!response.ok) throw new Error(`GET ${gatewayUrl}/metrics answered HTTP ${response.status}`);
  return sampleIn(await response.text(), name, labels);
}

/** One sample from Prometheus text (a gateway's `renderMetrics()`), as metricValue reads it. */
export function sampleIn(metrics: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = canonicalLabels(labels);
  for (const line of metrics.split("\n")) {
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (sample === null || sample[1] !== name) continue;
    if (canonicalLabels(parseLabels(sample[2] ?? "")) === wanted) return Number(sample[3]);
  }
  return 0;
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [, key, value] of text.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)) {
    if (key !== undefined && value !== undefined) labels[key] = value;
  }
  return labels;
}

function canonicalLabels(labels: Record<string, string>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));
}

/** How many messages on `channel` the gateway ignored because they did not address the bot. */
export function unaddressedCount(gatewayUrl: string, channel: string): Promise<number> {
  return metricValue(gatewayUrl, "switchboard_inbound_ignored_total", {
    channel,
    reason: "not addressed to the bot",
  });
}
