/**
 * Reads one sample from the gateway's Prometheus text at `${gatewayUrl}/metrics`, e.g.
 * `metricValue(url, "switchboard_inbound_duplicates_total", { channel: "slack" })`: the sum of the
 * samples that carry these labels (others, such as `account`, may vary), like PromQL's `sum`. A
 * sample the gateway has not emitted yet counts as 0, as counters never incremented are not rendered.
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

/** The samples of Prometheus text (a gateway's `renderMetrics()`) with `labels`, summed, as metricValue reads them. */
export function sampleIn(metrics: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of metrics.split("\n")) {
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (sample === null || sample[1] !== name) continue;
    const has = parseLabels(sample[2] ?? "");
    if (Object.entries(labels).every(([key, value]) => has[key] === value)) sum += Number(sample[3]);
  }
  return sum;
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [, key, value] of text.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)) {
    if (key !== undefined && value !== undefined) labels[key] = value;
  }
  return labels;
}

/** How many messages on `channel` the gateway ignored because they did not address the bot. */
export function unaddressedCount(gatewayUrl: string, channel: string): Promise<number> {
  return metricValue(gatewayUrl, "switchboard_inbound_ignored_total", {
    channel,
    reason: "not addressed to the bot",
  });
}
