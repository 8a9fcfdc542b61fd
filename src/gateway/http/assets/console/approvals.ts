/** Approvals: tool calls waiting for a person (pending by default); an operator approves or denies. */
import type { ApprovalRecord } from "../../../../runtime/store.ts";
import { h, idCell, preview, timeCell } from "../dom.js";
import { api, withQuery } from "./api.js";
import { navigate, type Route, replaceQuery } from "./router.js";
import { badge, postButton, table } from "./ui.js";

export async function showApprovals(view: HTMLElement, route: Route): Promise<void> {
  const decided = route.query.decided === "1";
  const all = h("input", {
    type: "checkbox",
    id: "show-decided",
    checked: decided,
    onchange: (event) =>
      replaceQuery({ decided: (event.target as HTMLInputElement).checked ? "1" : undefined }),
  });
  const approvals = await api<ApprovalRecord[]>(
    withQuery("/api/approvals", { limit: 100, state: decided ? undefined : "pending" }),
  );
  const reload = () => navigate(route);
  const rows = approvals.map((a) =>
    h(
      "tr",
      { "data-id": a.id },
      idCell(a.id),
      h("td", {}, badge(a.state)),
      h("td", { class: "mono" }, a.toolName),
      h(
        "td",
        { class: "text mono small", title: JSON.stringify(a.input) },
        preview(JSON.stringify(a.input), 80),
      ),
      idCell(a.conversationId),
      timeCell(a.createdAtMs, Date.now()),
      timeCell(a.state === "pending" ? a.expiresAtMs : a.decidedAtMs, Date.now()),
      h("td", {}, a.decidedBy ?? "—"),
      h(
        "td",
        { class: "actions" },
        ...(a.state === "pending"
          ? [
              postButton(
                "approve",
                "Approve the call",
                "secondary",
                `/api/approvals/${encodeURIComponent(a.id)}/approve`,
                reload,
              ),
              postButton(
                "deny",
                "Deny the call",
                "danger",
                `/api/approvals/${encodeURIComponent(a.id)}/deny`,
                reload,
              ),
            ]
          : []),
      ),
    ),
  );
  view.replaceChildren(
    h("div", { class: "toolbar" }, h("h2", {}, "Approvals"), h("label", {}, all, " show decided")),
    table(
      ["Id", "State", "Tool", "Arguments", "Conversation", "Asked", "Expires / decided", "By", ""],
      rows,
      decided ? "No approval requests." : "Nothing waits for a decision.",
    ),
  );
}
