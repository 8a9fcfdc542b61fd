/**
 * A conversation's settings: which binding matched where its latest message came from, and each
 * setting with what set it (`GET /api/conversations/:id/settings`, as `switchboard config explain`).
 */
import type { ExplainedConversation } from "../../../config/explain.ts";
import { h } from "../dom.js";
import { ApiError, api } from "./api.js";
import { fields, table } from "./ui.js";

/**
 * The explanation, or why there is none: no run a channel started (404), or a gateway that reads
 * no configuration (a standby, 503). The rest of the conversation's page shows either way.
 */
export async function loadSettings(conversationId: string): Promise<ExplainedConversation | string> {
  try {
    return await api<ExplainedConversation>(
      `/api/conversations/${encodeURIComponent(conversationId)}/settings`,
    );
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 503)) return error.message;
    throw error;
  }
}

export function settingsSection(explained: ExplainedConversation | string): HTMLElement {
  if (typeof explained === "string")
    return h("section", { id: "settings" }, h("h3", {}, "Settings"), h("p", { class: "muted" }, explained));
  const binding =
    explained.binding === null
      ? "none matches: the surfaces and defaults decide"
      : `bindings.${explained.binding} (match ${explained.bindingMatch})`;
  return h(
    "section",
    { id: "settings" },
    h("h3", {}, "Settings"),
    fields([
      ["Where", explained.conversation],
      ["Binding", h("span", { "data-binding": String(explained.binding) }, binding)],
      ...explained.notes.map((note): [string, string] => ["Note", note]),
    ]),
    table(
      ["Setting", "Value", "Set by"],
      explained.rows.map((row) =>
        h(
          "tr",
          { "data-setting": row.setting },
          h("td", { class: "mono" }, row.setting),
          h("td", { class: "text" }, row.value),
          h("td", { class: "mono" }, row.source),
        ),
      ),
      "No settings.",
    ),
  );
}
