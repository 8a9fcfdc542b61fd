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
  const wanted = canonicalLabels(labels);
  for (const line of (await response.text()).split("\n")) {
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
