/**
 * The web chat page. The browser keeps a random session id in localStorage; messages are POSTed
 * with a client message id (a retry reuses it, so ingress dedupes), answers arrive on the
 * session's event stream and are rendered by message id, so edits of a streaming reply replace
 * its text in place. The session id travels in a header, never in a URL, and when the gateway
 * asks for the web chat token (401) the page asks the user for it and keeps it in localStorage.
 */
import type { IngressOutcome } from "../../../../channels/types.ts";
import type { WebFile, WebStreamEvent, WebTranscriptEntry } from "../../../../channels/web/transcript.ts";
import { byId, formatTime, h, randomId } from "./dom.js";
import { readEventStream } from "./event-stream.js";
import { renderMarkdown } from "./markdown.js";
import { orderTranscript } from "./transcript-order.js";

const SESSION_KEY = "switchboard.sessionId";
const TOKEN_KEY = "switchboard.webToken";
/** Must match WEB_SESSION_HEADER in channels/web/routes.ts. */
const SESSION_HEADER = "x-switchboard-session";
const RECONNECT_DELAY_MS = 2000;
const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 8000];
const TYPING_SHOWN_MS = 6000;

type Pending = {
  clientMessageId: string;
  text: string;
  files?: SentFile[];
  /** "sent": the gateway accepted it (202) and its stream has not shown it yet. */
  state: "sending" | "sent" | "failed";
  /** When the gateway accepted it, by this browser's clock (shown until the stream confirms it). */
  sentAtMs?: number;
  error?: string;
};
type SentFile = { uploadId: string; name: string };
/** A file chosen, pasted or dropped: uploaded at once, sent with the next message. */
type Attachment = {
  key: string;
  name: string;
  state: "uploading" | "ready" | "failed";
  uploadId?: string;
  error?: string;
};

const sessionId = loadSessionId();
const transcript = byId("transcript");
const typing = byId("typing");
const connection = byId("connection");
const banner = byId("banner");
const input = byId<HTMLTextAreaElement>("input");
const sendButton = byId<HTMLButtonElement>("send");
const lengthWarning = byId("length-warning");
/** The gateway's limit; the page warns past it and never cuts what the user wrote or pasted. */
const maxChars = Number(input.dataset.maxChars ?? "8000");
const tokenForm = byId<HTMLFormElement>("token-form");
const tokenInput = byId<HTMLInputElement>("token");

/** Messages the gateway's stream confirmed, by id; shown in stored order (transcript-order.ts). */
const messages = new Map<string, WebTranscriptEntry>();
/** Sent by this page and not yet confirmed by the stream. */
const pending = new Map<string, Pending>();
/**
 * When the page first saw each message id (or sent it), as a running count: places a message this
 * page sent among the others until the gateway's stamp on it arrives, and breaks ties.
 */
const seenOrder = new Map<string, number>();
let seenCount = 0;
function seen(messageId: string): number {
  let order = seenOrder.get(messageId);
  if (order === undefined) {
    order = ++seenCount;
    seenOrder.set(messageId, order);
  }
  return order;
}
/** The notice a button press got, by the message the button is under (shown until a reload). */
const notices = new Map<string, string>();
let typingTimer: ReturnType<typeof setTimeout> | undefined;
/** Files for the next message, in the order they were added. */
const attachments: Attachment[] = [];
const attachmentList = byId("attachments");
const fileInput = byId<HTMLInputElement>("file");
/**
 * Object URLs of the files the agent sent, by file id. The files are fetched with the session
 * header (an `<img>` cannot send one, and the session id never goes in a URL), once per page.
 */
const fileUrls = new Map<string, Promise<string>>();

function loadSessionId(): string {
  const stored = localStorage.getItem(SESSION_KEY);
  if (stored && /^[A-Za-z0-9_-]{16,128}$/.test(stored)) return stored;
  const fresh = randomId(24);
  localStorage.setItem(SESSION_KEY, fresh);
  return fresh;
}

/** Headers every chat API request carries: the session id and, once entered, the token. */
function apiHeaders(extra: Record<string, string> = {}): Record<string, string> {
  const token = localStorage.getItem(TOKEN_KEY);
  return { [SESSION_HEADER]: sessionId, ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
}

/** Resolves once the user has entered a token (after the gateway refused the one it had). */
let tokenEntered: Promise<void> | null = null;
function askForToken(): Promise<void> {
  tokenEntered ??= new Promise<void>((resolve) => {
    setConnection("offline", "needs the token");
    banner.hidden = false;
    banner.textContent = localStorage.getItem(TOKEN_KEY)
      ? "The gateway refused the web chat token; enter the current one."
      : "This web chat needs its token (SWITCHBOARD_WEB_TOKEN); ask whoever runs the gateway.";
    tokenForm.hidden = false;
    tokenInput.focus();
    tokenForm.onsubmit = (event) => {
      event.preventDefault();
      const value = tokenInput.value.trim();
      if (value === "") return;
      localStorage.setItem(TOKEN_KEY, value);
      tokenInput.value = "";
      tokenForm.hidden = true;
      tokenEntered = null;
      resolve();
    };
  });
  return tokenEntered;
}

function render(): void {
  const nodes: Node[] = [];
  const placed = orderTranscript(
    [...messages.values()].map((entry) => ({ ...entry, seen: seen(entry.messageId) })),
    [...pending.values()]
      .filter((item) => !messages.has(item.clientMessageId))
      .map((item) => ({ item, seen: seen(item.clientMessageId) })),
  );
  for (const { kind, entry } of placed) {
    if (kind === "confirmed") nodes.push(confirmedBubble(entry));
    else nodes.push(pendingBubble(entry.item));
  }
  if (nodes.length === 0) nodes.push(h("p", { class: "empty" }, "Say hello — the agent answers here."));
  const atBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
  transcript.replaceChildren(...nodes);
  if (atBottom) transcript.scrollTop = transcript.scrollHeight;
}

function confirmedBubble(entry: WebTranscriptEntry): HTMLElement {
  const node = bubble(entry.role, entry.messageId, entry.text, formatTime(entry.atMs));
  for (const file of entry.files ?? []) node.firstChild?.before(fileView(file));
  if (entry.buttons) node.append(buttonRows(entry));
  const notice = notices.get(entry.messageId);
  if (notice !== undefined) node.append(h("div", { class: "bubble-meta", role: "status" }, notice));
  return node;
}

/** A message this page sent, until the stream confirms it; `data-pending` says how far it got. */
function pendingBubble(item: Pending): HTMLElement {
  const meta =
    item.state === "sending" ? "sending…" : item.state === "sent" ? formatTime(item.sentAtMs) : "not sent";
  const node = bubble("user", item.clientMessageId, shownText(item), meta);
  node.dataset.pending = item.state;
  if (item.state !== "sent") node.classList.add(item.state === "sending" ? "is-sending" : "is-failed");
  if (item.state === "failed")
    node.append(
      h(
        "div",
        { class: "bubble-error" },
        item.error ?? "Not sent.",
        " ",
        h("button", { type: "button", class: "link", onclick: () => void post(item) }, "Try again"),
      ),
    );
  return node;
}

function bubble(role: WebTranscriptEntry["role"], id: string, text: string, meta: string): HTMLElement {
  const body = h("div", { class: "bubble-text" });
  renderMarkdown(body, text);
  return h(
    "article",
    { class: `bubble ${role}`, "data-message-id": id },
    body,
    h("div", { class: "bubble-meta" }, meta),
  );
}

/** An image inline, any other file as a download link; the bytes come from fileUrl. */
function fileView(file: WebFile): HTMLElement {
  if (file.kind === "image") {
    const image = h("img", { class: "bubble-image", alt: file.name, "data-file-id": file.id });
    fileUrl(file).then(
      (url) => {
        image.src = url;
      },
      (error: Error) =>
        image.replaceWith(
          h("div", { class: "bubble-error" }, `${file.name} could not be shown: ${error.message}.`),
        ),
    );
    return image;
  }
  return h(
    "a",
    {
      class: "file-link",
      href: "#",
      "data-file-id": file.id,
      onclick: (event: Event) => {
        event.preventDefault();
        void download(file);
      },
    },
    `📄 ${file.name} (${formatSize(file.sizeBytes)})`,
  );
}

class FileGone extends Error {
  constructor(status: number) {
    super(status === 404 ? "it is no longer stored" : `the gateway answered ${status}`);
  }
}

/** The file's bytes as an object URL, fetched with the session header (once per page). */
function fileUrl(file: WebFile): Promise<string> {
  let url = fileUrls.get(file.id);
  if (!url) {
    url = (async () => {
      for (;;) {
        const response = await fetch(`/web/api/files/${encodeURIComponent(file.id)}`, {
          headers: apiHeaders(),
        });
        if (response.status === 401) {
          await askForToken();
          continue;
        }
        // Many files at once (a reload of a long chat) can meet the per-address rate.
        if (response.status === 429) {
          const seconds = Number(response.headers.get("retry-after") ?? "2");
          await new Promise((resolve) =>
            setTimeout(resolve, 1000 * (Number.isFinite(seconds) ? seconds : 2)),
          );
          continue;
        }
        if (!response.ok) throw new FileGone(response.status);
        return URL.createObjectURL(await response.blob());
      }
    })();
    // A file the gateway refused (404: no longer stored) stays refused; only an outage is retried.
    url.catch((error) => {
      if (!(error instanceof FileGone)) fileUrls.delete(file.id);
    });
    fileUrls.set(file.id, url);
  }
  return url;
}

async function download(file: WebFile): Promise<void> {
  try {
    const link = h("a", { href: await fileUrl(file), download: file.name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
  } catch (error) {
    banner.hidden = false;
    banner.textContent = `${file.name} could not be downloaded: ${(error as Error).message}.`;
  }
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** The message's buttons; a press POSTs the button's data as `action` and shows the notice under it. */
function buttonRows(entry: WebTranscriptEntry): HTMLElement {
  const rows = (entry.buttons ?? []).map((row) =>
    h(
      "div",
      { class: "button-row" },
      ...row.map((button) =>
        h(
          "button",
          {
            type: "button",
            class: "link",
            onclick: (event: Event) =>
              void press(entry.messageId, button.data, event.target as HTMLButtonElement),
          },
          button.label,
        ),
      ),
    ),
  );
  return h("div", { class: "bubble-buttons" }, ...rows);
}

async function press(messageId: string, data: string, button: HTMLButtonElement): Promise<void> {
  const show = (text: string) => {
    notices.set(messageId, text);
    render();
  };
  button.disabled = true;
  const clientMessageId = randomId(16);
  for (const delayMs of [0, ...RETRY_DELAYS_MS]) {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const result = await attemptPost({ clientMessageId, action: data });
    if (result.kind === "unauthorized") {
      await askForToken();
      continue;
    }
    if (result.kind === "retry") continue;
    button.disabled = false;
    show(
      result.kind === "rejected"
        ? result.message
        : result.outcome.kind === "action"
          ? result.outcome.notice
          : "",
    );
    return;
  }
  button.disabled = false;
  show("The gateway did not answer; press again.");
}

function apply(event: WebStreamEvent): void {
  switch (event.type) {
    case "snapshot":
      messages.clear();
      for (const entry of event.messages) messages.set(entry.messageId, entry);
      break;
    case "message": {
      const { type: _type, ...entry } = event;
      messages.set(entry.messageId, entry);
      if (entry.role === "assistant") hideTyping();
      break;
    }
    case "edit": {
      const entry = messages.get(event.messageId);
      if (entry) {
        entry.text = event.text;
        if (event.buttons) entry.buttons = event.buttons;
        else delete entry.buttons;
      }
      hideTyping();
      break;
    }
    case "delete":
      messages.delete(event.messageId);
      break;
    case "typing":
      typing.hidden = false;
      clearTimeout(typingTimer);
      typingTimer = setTimeout(hideTyping, TYPING_SHOWN_MS);
      return;
  }
  for (const id of pending.keys()) if (messages.has(id)) pending.delete(id);
  render();
}

function hideTyping(): void {
  clearTimeout(typingTimer);
  typing.hidden = true;
}

/** Follows the session's event stream, reconnecting; the server replays the transcript each time. */
async function connect(): Promise<void> {
  for (;;) {
    try {
      const response = await fetch("/web/api/stream", {
        headers: apiHeaders({ accept: "text/event-stream" }),
        cache: "no-store",
      });
      if (response.status === 401) {
        await askForToken();
        continue;
      }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      setConnection("online", "connected");
      await readEventStream(response, (frame) => {
        if (frame.data !== null) apply(JSON.parse(frame.data) as WebStreamEvent);
      });
    } catch {
      // Reconnect below.
    }
    setConnection("offline", "reconnecting…");
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_DELAY_MS));
  }
}

function setConnection(state: "online" | "offline", label: string): void {
  connection.dataset.state = state;
  connection.textContent = label;
  banner.hidden = state === "online";
  banner.textContent =
    state === "online"
      ? ""
      : "Lost the connection to the gateway; reconnecting. Messages you send are kept and retried.";
}

async function post(item: Pending): Promise<void> {
  item.state = "sending";
  item.error = undefined;
  render();
  for (let attempt = 0; ; attempt++) {
    const result = await attemptPost(item);
    if (result.kind === "done") {
      // The stream confirms it with the gateway's stamp, which orders it; until then it stays where
      // it was sent (this browser's clock is not the gateway's, so it cannot order anything).
      if (!messages.has(item.clientMessageId)) {
        item.state = "sent";
        item.sentAtMs = Date.now();
      }
      render();
      return;
    }
    if (result.kind === "unauthorized") {
      await askForToken();
      continue;
    }
    if (result.kind === "rejected" || attempt >= RETRY_DELAYS_MS.length) {
      item.state = "failed";
      item.error = result.message;
      render();
      return;
    }
    const waitMs =
      result.kind === "retry" && result.afterMs !== undefined ? result.afterMs : RETRY_DELAYS_MS[attempt];
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

type PostResult =
  | { kind: "done"; outcome: IngressOutcome }
  | { kind: "unauthorized" }
  | { kind: "retry"; message: string; afterMs?: number }
  | { kind: "rejected"; message: string };

async function attemptPost(
  item:
    | { clientMessageId: string; text: string; files?: SentFile[] }
    | { clientMessageId: string; action: string },
): Promise<PostResult> {
  let response: Response;
  const content =
    "action" in item
      ? { action: item.action }
      : {
          ...(item.text.trim() === "" ? {} : { text: item.text }),
          ...(item.files && item.files.length > 0 ? { files: item.files } : {}),
        };
  try {
    response = await fetch("/web/api/messages", {
      method: "POST",
      headers: apiHeaders({ "content-type": "application/json" }),
      body: JSON.stringify({ sessionId, clientMessageId: item.clientMessageId, ...content }),
    });
  } catch {
    return { kind: "retry", message: "The gateway did not answer." };
  }
  if (response.status === 202) return { kind: "done", outcome: (await response.json()) as IngressOutcome };
  if (response.status === 401) return { kind: "unauthorized" };
  const message =
    problemMessage(await response.json().catch(() => null)) ?? `The gateway answered ${response.status}.`;
  if (response.status === 429)
    return { kind: "retry", message, afterMs: 1000 * Number(response.headers.get("retry-after") ?? "5") };
  return response.status >= 500 ? { kind: "retry", message } : { kind: "rejected", message };
}

/**
 * The message of the gateway's problem answer (`{ error: { code, message } }`), which says what
 * went wrong and what to do; undefined when the answer carried none (a proxy's, or Bun's own 413).
 */
function problemMessage(body: unknown): string | undefined {
  const error = (body as { error?: { message?: unknown } } | null)?.error;
  const message = error?.message;
  return typeof message === "string" && message.trim() !== "" ? message : undefined;
}

/** An upload refused without a message: what the status means for this file. */
function uploadRefusal(status: number, file: File): string {
  if (status === 413)
    return `The file is ${formatSize(file.size)}, more than this gateway accepts for one file (its SWITCHBOARD_MAX_FILE_MB); send a smaller one.`;
  return `The gateway answered ${status}; remove it and attach it again.`;
}

/** Warns while the draft is over the limit, and holds the send button until it fits. */
function checkLength(): boolean {
  const over = input.value.length > maxChars;
  lengthWarning.hidden = !over;
  sendButton.disabled = over;
  if (over)
    lengthWarning.textContent = `This message is ${input.value.length.toLocaleString("en")} characters; the limit is ${maxChars.toLocaleString("en")}. Shorten it or split it to send it; nothing was cut.`;
  return !over;
}

function submit(event: Event): void {
  event.preventDefault();
  const text = input.value;
  if (attachments.some((a) => a.state === "uploading")) return;
  const files = attachments.flatMap((a) => (a.uploadId ? [{ uploadId: a.uploadId, name: a.name }] : []));
  if ((text.trim() === "" && files.length === 0) || !checkLength()) return;
  input.value = "";
  attachments.length = 0;
  renderAttachments();
  const item: Pending = { clientMessageId: randomId(16), text, files, state: "sending" };
  seen(item.clientMessageId);
  pending.set(item.clientMessageId, item);
  void post(item);
}

/** What the transcript shows for a message this page sent (as the gateway records it). */
function shownText(item: { text: string; files?: SentFile[] }): string {
  return [item.text, ...(item.files ?? []).map((f) => `📎 ${f.name}`)]
    .filter((line) => line.trim() !== "")
    .join("\n");
}

/** Uploads a chosen, pasted or dropped file at once; the next message carries it. */
async function attach(file: File): Promise<void> {
  const attachment: Attachment = { key: randomId(8), name: file.name || "pasted file", state: "uploading" };
  attachments.push(attachment);
  renderAttachments();
  for (;;) {
    let response: Response;
    try {
      response = await fetch("/web/api/uploads", {
        method: "POST",
        headers: apiHeaders({ "content-type": "application/octet-stream" }),
        body: file,
      });
    } catch {
      attachment.state = "failed";
      attachment.error = "The gateway did not answer; remove it and attach it again.";
      break;
    }
    if (response.status === 401) {
      await askForToken();
      continue;
    }
    const body = (await response.json().catch(() => null)) as { uploadId?: unknown } | null;
    if (response.status === 201 && typeof body?.uploadId === "string") {
      attachment.state = "ready";
      attachment.uploadId = body.uploadId;
    } else {
      attachment.state = "failed";
      attachment.error = problemMessage(body) ?? uploadRefusal(response.status, file);
    }
    break;
  }
  renderAttachments();
}

function renderAttachments(): void {
  attachmentList.hidden = attachments.length === 0;
  attachmentList.replaceChildren(
    ...attachments.map((a) =>
      h(
        "li",
        { class: `attachment state-${a.state}`, "data-state": a.state },
        `📎 ${a.name}`,
        a.state === "uploading" ? " (uploading…)" : "",
        a.error ? ` — ${a.error}` : "",
        h(
          "button",
          {
            type: "button",
            class: "remove",
            "aria-label": `Remove ${a.name}`,
            onclick: () => {
              attachments.splice(attachments.indexOf(a), 1);
              renderAttachments();
            },
          },
          "×",
        ),
      ),
    ),
  );
  sendButton.disabled = attachments.some((a) => a.state === "uploading") || input.value.length > maxChars;
}

const attachAll = (files: FileList | null | undefined) => {
  for (const file of Array.from(files ?? [])) void attach(file);
};
byId("attach").addEventListener("click", () => fileInput.click());
fileInput.addEventListener("change", () => {
  attachAll(fileInput.files);
  fileInput.value = "";
});
input.addEventListener("paste", (event) => {
  const files = event.clipboardData?.files;
  if (files && files.length > 0) {
    event.preventDefault();
    attachAll(files);
  }
});
document.addEventListener("dragover", (event) => {
  if (event.dataTransfer?.types.includes("Files")) event.preventDefault();
});
document.addEventListener("drop", (event) => {
  if (!event.dataTransfer?.files.length) return;
  event.preventDefault();
  attachAll(event.dataTransfer.files);
});

byId("composer").addEventListener("submit", submit);
input.addEventListener("input", checkLength);
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) submit(event);
});
render();
void connect();
