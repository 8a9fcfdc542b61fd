/** Tiny DOM helpers shared by the chat page and the console. */

type Child = Node | string | null | undefined | false;

/** Creates an element; string children become text nodes (never parsed as HTML). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean | ((event: Event) => void)> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) element.setAttribute(name, "");
    else if (value !== false) element.setAttribute(name, value);
  }
  for (const child of children) if (child) element.append(child);
  return element;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) throw new Error(`The page has no #${id}`);
  return element as T;
}

/** `2026-11-30 08:56:24` in the browser's time zone; "—" for null. */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A URL-safe random id from `bytes` random bytes (works outside secure contexts too). */
export function randomId(bytes: number): string {
  const data = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...data))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

export function preview(text: string, maxChars: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > maxChars ? `${flat.slice(0, maxChars - 1)}…` : flat;
}

/** "5 min ago", "in 2 h", "just now": how far `ms` is from `nowMs`, in the largest fitting unit. */
export function relativeTime(ms: number, nowMs: number): string {
  const seconds = Math.round((ms - nowMs) / 1000);
  if (Math.abs(seconds) < 45) return "just now";
  const units: Array<[Intl.RelativeTimeFormatUnit, number]> = [
    ["day", 86_400],
    ["hour", 3600],
    ["minute", 60],
  ];
  const format = new Intl.RelativeTimeFormat("en", { numeric: "always", style: "short" });
  for (const [unit, size] of units) {
    if (Math.abs(seconds) >= size || unit === "minute")
      return format.format(Math.round(seconds / size), unit);
  }
  return format.format(seconds, "second");
}

/** A table cell with a relative time; the exact time, with the browser's zone, on hover. */
export function timeCell(ms: number | null | undefined, nowMs: number): HTMLTableCellElement {
  if (ms === null || ms === undefined) return h("td", { class: "time" }, "—");
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return h(
    "td",
    { class: "time" },
    h(
      "time",
      { datetime: new Date(ms).toISOString(), title: `${formatTime(ms)} ${zone}` },
      relativeTime(ms, nowMs),
    ),
  );
}

/** A table cell with an id, shortened to fit; the whole id on hover and a button that copies it. */
export function idCell(id: string | null): HTMLTableCellElement {
  if (id === null) return h("td", { class: "mono id" }, "—");
  const copy = h(
    "button",
    {
      type: "button",
      class: "copy",
      title: `Copy ${id}`,
      "aria-label": `Copy ${id}`,
      onclick: (event: Event) => {
        event.stopPropagation();
        void navigator.clipboard?.writeText(id).then(() => {
          copy.textContent = "✓";
          setTimeout(() => {
            copy.textContent = "⧉";
          }, 1500);
        });
      },
    },
    "⧉",
  );
  return h("td", { class: "mono id-cell" }, h("span", { class: "id", title: id }, id), copy);
}
