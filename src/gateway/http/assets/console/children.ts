/** The child agents a run or conversation delegated to, as a tree: states, steps and timings. */
import type { ChildNode } from "../../../../children/tree.ts";
import { h, timeCell } from "../dom.js";
import { href } from "./router.js";
import { badge, duration, table } from "./ui.js";

/** One row per child, each under the one that started it (indented by depth). */
export function childTreeSection(children: readonly ChildNode[]): HTMLElement {
  const rows: HTMLElement[] = [];
  const add = (nodes: readonly ChildNode[], level: number) => {
    for (const child of nodes) {
      const { run } = child;
      rows.push(
        h(
          "tr",
          { "data-child": child.handle, "data-level": String(level) },
          h(
            "td",
            { class: "mono tree-handle" },
            level > 0 ? "└ " : "",
            h("a", { href: href({ tab: "runs", id: run.id }) }, child.handle),
          ),
          h("td", {}, child.agent),
          h("td", {}, badge(child.state)),
          h("td", {}, badge(run.state)),
          h("td", { class: "num" }, String(run.steps)),
          timeCell(run.startedAtMs, Date.now()),
          h(
            "td",
            { class: "num" },
            duration(run.startedAtMs === null ? null : (run.finishedAtMs ?? Date.now()) - run.startedAtMs),
          ),
          h("td", {}, child.resultState ? badge(child.resultState) : "—"),
        ),
      );
      add(child.children, level + 1);
    }
  };
  add(children, 0);
  return h(
    "section",
    { id: "child-agents" },
    h("h3", {}, "Child agents"),
    table(
      ["Handle", "Agent", "Link", "Run", "Steps", "Started", "Duration", "Result"],
      rows,
      "No child agents.",
    ),
  );
}
