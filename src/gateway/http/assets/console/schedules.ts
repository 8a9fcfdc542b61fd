/** Schedules: live ones (ended ones on request), whose they are, and pause / resume / end. */
import type { Schedule } from "../../../../../schedules/types.ts";
import { formatTime, h, idCell, preview, timeCell } from "../dom.js";
import { api, withQuery } from "./api.js";
import { navigate, type Route, replaceQuery } from "./router.js";
import { badge, postButton, table } from "./ui.js";

export async function showSchedules(view: HTMLElement, route: Route): Promise<void> {
  const showEnded = route.query.ended === "1";
  const schedules = await api<Schedule[]>(withQuery("/api/schedules", { all: showEnded ? "1" : undefined }));
  const ended = h("input", {
    type: "checkbox",
    id: "show-ended",
    checked: showEnded,
    onchange: (event) =>
      replaceQuery({ ended: (event.target as HTMLInputElement).checked ? "1" : undefined }),
  });
  const reload = () => navigate(route);
  const rows = schedules.map((s) =>
    h(
      "tr",
      { "data-id": s.id },
      idCell(s.id),
      h("td", {}, badge(s.state)),
      h("td", {}, timing(s)),
      timeCell(s.nextAtMs, Date.now()),
      idCell(s.chatKey),
      idCell(s.conversationId),
      h(
        "td",
        { class: "text", title: s.prompt },
        preview(s.prompt, 60),
        s.lastError ? h("div", { class: "error small" }, s.lastError) : null,
      ),
      h("td", { class: "actions" }, ...scheduleButtons(s, reload)),
    ),
  );
  view.replaceChildren(
    h("div", { class: "toolbar" }, h("h2", {}, "Schedules"), h("label", {}, ended, " show ended")),
    table(["Id", "State", "When", "Next run", "Chat", "Conversation", "Prompt", ""], rows, "No schedules."),
  );
}

function timing(s: Schedule): string {
  if (s.kind === "at") return `once at ${formatTime(s.spec.atMs)}`;
  if (s.spec.type === "cron") return `cron ${s.spec.expression} (${s.timezone})`;
  return `every ${Math.round(s.spec.intervalMs / 60000)} min`;
}

function scheduleButtons(s: Schedule, reload: () => void): HTMLElement[] {
  const act = (action: "pause" | "resume" | "cancel", label: string, kind = "secondary") =>
    postButton(action, label, kind, `/api/schedules/${encodeURIComponent(s.id)}/${action}`, reload);
  return [
    s.state === "active" && act("pause", "Pause"),
    s.state === "paused" && act("resume", "Resume"),
    (s.state === "active" || s.state === "paused") && act("cancel", "End schedule", "danger"),
  ].filter((b): b is HTMLButtonElement => b !== false);
}
