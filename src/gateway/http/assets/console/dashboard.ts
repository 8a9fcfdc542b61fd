/** The dashboard: work in flight, replies waiting or stuck, latency, today's usage, what is up. */
import type { Dashboard } from "../../../dashboard.ts";
import type { Quantiles } from "../../../metrics.ts";
import { h, relativeTime } from "../dom.js";
import { api } from "./api.js";
import { href, type Tab } from "./router.js";
import { cost, duration, table, tokens } from "./ui.js";

export async function showDashboard(view: HTMLElement): Promise<Dashboard> {
  const d = await api<Dashboard>("/api/dashboard");
  const tile = (
    id: string,
    label: string,
    value: number,
    link: { tab: Tab; query?: Record<string, string> },
    alert = false,
  ) =>
    h(
      "a",
      { class: `tile${alert && value > 0 ? " alert" : ""}`, id: `tile-${id}`, href: href(link) },
      h("span", { class: "tile-value" }, String(value)),
      h("span", { class: "tile-label" }, label),
    );
  const latencyRow = (name: string, q: Quantiles | null) =>
    h(
      "tr",
      { "data-latency": name },
      h("td", {}, name),
      h("td", { class: "num" }, q ? duration(q.p50) : "—"),
      h("td", { class: "num" }, q ? duration(q.p99) : "—"),
      h("td", { class: "num" }, q ? String(q.count) : "0"),
    );
  const usage = d.usageToday;
  view.replaceChildren(
    h("h2", {}, "Dashboard"),
    h(
      "div",
      { class: "tiles" },
      tile("running", "runs in flight", d.runs.inFlight, { tab: "runs", query: { state: "running" } }),
      tile("queued", "runs queued", d.runs.queued, { tab: "runs", query: { state: "queued" } }),
      tile("awaiting", "awaiting approval", d.runs.awaitingApproval, { tab: "approvals" }),
      tile("waiting", "replies waiting", d.outbox.waiting + d.outbox.sending, {
        tab: "outbox",
        query: { state: "pending" },
      }),
      tile(
        "ambiguous",
        "ambiguous replies",
        d.outbox.ambiguous,
        { tab: "outbox", query: { state: "ambiguous" } },
        true,
      ),
      tile("failed", "failed replies", d.outbox.failed, { tab: "outbox", query: { state: "failed" } }, true),
    ),
    ...(d.oldestAmbiguousSinceMs === null
      ? []
      : [
          h(
            "p",
            { class: "error" },
            `The oldest ambiguous reply became ambiguous ${relativeTime(d.oldestAmbiguousSinceMs, d.nowMs)}.`,
          ),
        ]),
    h(
      "div",
      { class: "split" },
      h(
        "section",
        {},
        h("h3", {}, "Latency (this process)"),
        table(
          ["Stage", "p50", "p99", "Count"],
          [
            latencyRow("model step", d.latency.step),
            ...Object.entries(d.latency.stages).map(([stage, q]) => latencyRow(stage, q)),
            latencyRow("delivery (last 1,000)", d.latency.delivery),
          ],
          "",
        ),
      ),
      h(
        "section",
        {},
        h("h3", {}, "Usage today (UTC)"),
        h(
          "p",
          { id: "usage-today" },
          `${usage.steps} model steps in ${usage.runs} runs · ${tokens(usage.usage)} tokens · cost ${cost(usage.usage, usage.costComplete)}`,
        ),
        h("h3", {}, "Channels and MCP servers"),
        table(
          ["Check", "State", "Detail"],
          Object.entries(d.checks).map(([name, check]) =>
            h(
              "tr",
              { "data-check": name },
              h("td", { class: "mono" }, name),
              h(
                "td",
                {},
                h(
                  "span",
                  {
                    class: `badge state-${check.ok ? "up" : check.degraded ? "degraded" : "down"}`,
                    "data-state": check.ok ? "up" : check.degraded ? "degraded" : "down",
                  },
                  check.ok ? "up" : check.degraded ? "degraded" : "down",
                ),
              ),
              h("td", { class: "small" }, check.detail ?? ""),
            ),
          ),
          "No checks.",
        ),
      ),
    ),
  );
  return d;
}
