/** Pieces every console view uses: badges, tables, filters, "load more", the note dialog, toasts. */
import { byId, h } from "../dom.js";
import { api, messageOf, type Page } from "./api.js";

export function badge(value: string): HTMLElement {
  return h("span", { class: `badge state-${value}`, "data-state": value }, value);
}

export function table(headings: string[], rows: HTMLElement[], empty: string): HTMLElement {
  if (rows.length === 0) return h("p", { class: "muted" }, empty);
  const head = h("thead", {}, h("tr", {}, ...headings.map((t) => h("th", {}, t))));
  const body = h("tbody", {}, ...rows.map((row) => labelled(row, headings)));
  return h("div", { class: "table-wrap" }, h("table", {}, head, body));
}

/**
 * Gives each cell of `row` its column's heading as `data-label`: on a phone a row is a card and
 * each cell shows its label (style.css), since the heading row is not shown.
 */
function labelled(row: HTMLElement, headings: readonly string[]): HTMLElement {
  Array.from(row.children).forEach((cell, index) => {
    const heading = headings[index];
    if (heading !== undefined) cell.setAttribute("data-label", heading);
  });
  return row;
}

/** A `<select>` of `values` (plus "any"), showing `current`; `onChange` gets "" for any. */
export function choice(
  id: string,
  label: string,
  values: readonly string[],
  current: string | undefined,
  onChange: (value: string) => void,
): HTMLElement {
  const select = h(
    "select",
    { id, onchange: (event) => onChange((event.target as HTMLSelectElement).value) },
    h("option", { value: "" }, `any ${label}`),
    ...values.map((v) => h("option", { value: v, selected: v === current }, v)),
  );
  return h("label", {}, `${label[0]!.toUpperCase()}${label.slice(1)} `, select);
}

/** A text filter that applies on Enter or when it loses focus. */
export function textFilter(
  id: string,
  label: string,
  current: string | undefined,
  onChange: (value: string) => void,
  type = "text",
): HTMLElement {
  const input = h("input", { id, type, value: current ?? "", placeholder: label });
  const apply = () => {
    if (input.value.trim() !== (current ?? "")) onChange(input.value.trim());
  };
  input.addEventListener("change", apply);
  input.addEventListener("keydown", (event) => {
    if ((event as KeyboardEvent).key === "Enter") apply();
  });
  return h("label", {}, `${label} `, input);
}

/**
 * A table whose rows come page by page: the first page now, then a "Load more" button while the
 * API hands out a cursor.
 */
export async function pagedTable<T>(options: {
  headings: string[];
  empty: string;
  load: (cursor: string | null) => Promise<Page<T>>;
  row: (item: T) => HTMLElement;
  moreLabel?: string;
}): Promise<HTMLElement> {
  const first = await options.load(null);
  if (first.items.length === 0) return h("p", { class: "muted" }, options.empty);
  const row = (item: T) => labelled(options.row(item), options.headings);
  const body = h("tbody", {}, ...first.items.map(row));
  const container = h(
    "div",
    {},
    h(
      "div",
      { class: "table-wrap" },
      h("table", {}, h("thead", {}, h("tr", {}, ...options.headings.map((t) => h("th", {}, t)))), body),
    ),
  );
  let cursor = first.nextCursor;
  const more = h(
    "button",
    { type: "button", class: "secondary more", id: "load-more" },
    options.moreLabel ?? "Load more",
  );
  more.addEventListener("click", async () => {
    if (cursor === null) return;
    more.disabled = true;
    try {
      const page = await options.load(cursor);
      body.append(...page.items.map(row));
      cursor = page.nextCursor;
    } catch (error) {
      toast(messageOf(error), true);
    }
    more.disabled = false;
    more.hidden = cursor === null;
  });
  more.hidden = cursor === null;
  container.append(more);
  return container;
}

/** A definition list of label/value pairs (values may be elements). */
export function fields(pairs: Array<[string, Node | string | null | undefined]>): HTMLElement {
  const list = h("dl", { class: "fields" });
  for (const [label, value] of pairs) list.append(h("dt", {}, label), h("dd", {}, value ?? "—"));
  return list;
}

/** A button that POSTs `path`, says what the record's state became, then calls `done`. */
export function postButton(
  action: string,
  label: string,
  kind: string,
  path: string,
  done: () => void,
): HTMLButtonElement {
  return h(
    "button",
    {
      type: "button",
      class: kind,
      "data-action": action,
      onclick: async () => {
        try {
          const updated = await api<{ id: string; state: string }>(path, { method: "POST" });
          toast(`${updated.id} is now ${updated.state}.`);
        } catch (error) {
          toast(messageOf(error), true);
        }
        done();
      },
    },
    label,
  );
}

/** The note dialog; null when the operator went back. */
export function askNote(title: string, required: boolean): Promise<string | null> {
  const dialog = byId<HTMLDialogElement>("note-dialog");
  const input = byId<HTMLTextAreaElement>("note-input");
  const error = byId("note-error");
  byId("note-title").textContent = title;
  byId("note-label").textContent = required
    ? "Note (required): what did you check on the platform?"
    : "Note (optional)";
  input.value = "";
  error.hidden = true;
  dialog.showModal();
  return new Promise((resolve) => {
    const form = byId<HTMLFormElement>("note-form");
    const cancel = byId("note-cancel");
    const finish = (value: string | null) => {
      form.removeEventListener("submit", onSubmit);
      cancel.removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      dialog.close();
      resolve(value);
    };
    const onSubmit = (event: Event) => {
      event.preventDefault();
      const note = input.value.trim();
      if (required && note === "") {
        error.textContent = "Write a note: it is kept in the record's history.";
        error.hidden = false;
        return;
      }
      finish(note);
    };
    const onCancel = () => finish(null);
    form.addEventListener("submit", onSubmit);
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
  });
}

let toastTimer: ReturnType<typeof setTimeout> | undefined;
export function toast(message: string, isError = false): void {
  const element = byId("toast");
  element.textContent = message;
  element.classList.toggle("error", isError);
  element.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    element.hidden = true;
  }, 4000);
}

/** Token counts as "1,204 in / 311 out"; "—" when the provider reported none. */
export function tokens(usage: { inputTokens?: number; outputTokens?: number }): string {
  if (usage.inputTokens === undefined && usage.outputTokens === undefined) return "—";
  const n = (value: number | undefined) => (value === undefined ? "?" : value.toLocaleString("en"));
  return `${n(usage.inputTokens)} in / ${n(usage.outputTokens)} out`;
}

/** "$0.0042"; "unknown" when a step did not report its cost (unknown is not zero). */
export function cost(usage: { costUsd?: number }, complete = true): string {
  return usage.costUsd === undefined || !complete ? "unknown" : `$${usage.costUsd.toFixed(4)}`;
}

/** "850 ms", "12.3 s", "4 min"; "—" when unknown. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
