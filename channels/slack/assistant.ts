/**
 * Slack's assistant threads (the Agents & AI Apps container): suggested prompts when a thread
 * starts, "is thinking…" while an answer is being worked on, and the thread's title from its first
 * message (the message that began the thread's conversation, as ingress says, so a restart
 * between the thread's start and its first message changes nothing). All of it is decoration around ordinary inputs and outbox replies: fire and forget,
 * never in the acknowledgement's or the reply's path. An app without the feature (or without the
 * `assistant:write` scope) refuses these calls; the first refusal is logged once at warn and the
 * calls stop for that workspace.
 */
import { Assistant, type webApi } from "@slack/bolt";
import { isSwitchboardError } from "../../src/errors.ts";
import type { Clock } from "../../src/util/clock.ts";
import type { Logger } from "../../src/util/log.ts";
import type { IngressOutcome } from "../types.ts";
import { toSwitchboardError } from "./errors.ts";
import { decodeReplyTarget } from "./keys.ts";

/** One suggested prompt: `title` shows on the chip, `message` is what the user sends by clicking it. */
export interface AssistantPrompt {
  title: string;
  message: string;
}

/** Shown as "<app name> is thinking…" under the thread while its answer is worked on. */
export const THINKING_STATUS = "is thinking…";

/** Slack's `{ok:false}` codes that mean the app cannot use assistant threads at all. */
const FEATURE_OFF_ERRORS = new Set(["not_allowed", "missing_scope", "unknown_method"]);

/** How often a shown thinking status is set again (Slack drops it after 2 minutes without a message). */
export const STATUS_REFRESH_MS = 90_000;

/** Longest the thinking status is kept up for one answer. */
export const MAX_THINKING_MS = 15 * 60_000;

/** Longest thread title taken from a first message, in characters. */
export const MAX_TITLE_CHARS = 60;

/**
 * A thread's title from the text of its first message: Slack markup (`<@U…>`, `<url|label>`)
 * reduced to what it shows, whitespace collapsed, cut at a word within MAX_TITLE_CHARS with "…".
 * Null when nothing readable is left (a message with only a file).
 */
export function threadTitle(text: string): string | null {
  const plain = text
    .replace(/<[@#!][^>|]*\|([^>]+)>/g, "$1")
    .replace(/<[@#!][^>]*>/g, "")
    .replace(/<([^>|]+)\|([^>]+)>/g, "$2")
    .replace(/<([^>]+)>/g, "$1")
    .replace(/\s+/g, " ")
    .trim();
  if (plain === "") return null;
  if (plain.length <= MAX_TITLE_CHARS) return plain;
  const cut = plain.slice(0, MAX_TITLE_CHARS - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > MAX_TITLE_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

export interface AssistantThreadsOptions {
  client: webApi.WebClient;
  /** The token, or a function that reads the current one (an installed workspace's rotates). */
  botToken: string | (() => string);
  /** Offered when a thread starts; empty: none are set. */
  prompts: readonly AssistantPrompt[];
  /** The workspace the adapter serves (known after auth.test), for the once-per-workspace warning. */
  team: () => string | undefined;
  /** Times the status refresh. */
  clock: Clock;
  logger: Logger;
}

/** A message between its arrival and ingress's outcome; `answered` once something was sent to its thread. */
interface Arrival {
  answered: boolean;
}

/** A thread in the assistant container, by its DM channel and root ts. */
interface ThreadRef {
  channel: string;
  threadTs: string;
}

export class AssistantThreads {
  readonly #options: AssistantThreadsOptions;
  /**
   * Whether the app may use assistant threads: unknown until a call succeeds (on) or is refused
   * for want of the feature (off: nothing more is tried). While unknown, one call at a time goes
   * out, so an app without the feature sees one refused call, not one per thread.
   */
  #feature: "unknown" | "on" | "off" = "unknown";
  /** The call finding out, while the feature is unknown. */
  #probe: Promise<void> | null = null;
  /** Threads showing (or about to show) the thinking status. */
  readonly #thinking = new Set<string>();
  /** The refresh of each thread showing the thinking status; aborted when it is cleared. */
  readonly #refreshing = new Map<string, AbortController>();
  /** Messages on their way through ingress, by thread. */
  readonly #pending = new Map<string, Set<Arrival>>();
  /** The last setStatus call of each thread with one under way: the next waits for it. */
  readonly #chains = new Map<string, Promise<void>>();
  readonly #inFlight = new Set<Promise<void>>();

  constructor(options: AssistantThreadsOptions) {
    this.#options = options;
  }

  /**
   * Bolt's Assistant, to register before the adapter's own middleware: it takes
   * `assistant_thread_started` (suggested prompts), `assistant_thread_context_changed` (nothing
   * to do: switchboard does not use the channel the user is looking at) and user messages in the
   * app's DM threads, which go to `handleMessage` (ingress, as every message) before the status
   * and title are set. A rejection of `handleMessage` leaves the event unacknowledged.
   */
  boltAssistant(handleMessage: (body: Record<string, unknown>) => Promise<IngressOutcome | null>): Assistant {
    return new Assistant({
      threadStarted: async ({ event }) => {
        const thread = event.assistant_thread as Partial<typeof event.assistant_thread> | undefined;
        if (typeof thread?.channel_id !== "string" || typeof thread.thread_ts !== "string") return;
        this.started({ channel: thread.channel_id, threadTs: thread.thread_ts });
      },
      threadContextChanged: async () => {},
      userMessage: async ({ body, payload }) => {
        const message = payload as { channel?: unknown; thread_ts?: unknown; text?: unknown };
        if (typeof message.channel !== "string" || typeof message.thread_ts !== "string") {
          await handleMessage(body as unknown as Record<string, unknown>);
          return;
        }
        const thread = { channel: message.channel, threadTs: message.thread_ts };
        const arrival = this.#arrive(thread);
        try {
          const outcome = await handleMessage(body as unknown as Record<string, unknown>);
          if (outcome?.kind === "admitted")
            this.admitted(
              thread,
              typeof message.text === "string" ? message.text : "",
              outcome.startsConversation === true,
              arrival,
            );
        } finally {
          this.#pending.get(keyOf(thread))?.delete(arrival);
          if (this.#pending.get(keyOf(thread))?.size === 0) this.#pending.delete(keyOf(thread));
        }
      },
    });
  }

  /** A thread was opened: offer the prompts. */
  started(thread: ThreadRef): void {
    const prompts = this.#options.prompts;
    if (prompts.length === 0) return;
    this.#track(
      this.#call("assistant.threads.setSuggestedPrompts", (client, token) =>
        client.assistant.threads.setSuggestedPrompts({
          token,
          channel_id: thread.channel,
          thread_ts: thread.threadTs,
          prompts: [...prompts],
        }),
      ),
    );
  }

  /**
   * A message in the thread was admitted: show the thinking status and, when it began the
   * thread's conversation (`startsConversation`), name the thread after it.
   */
  admitted(thread: ThreadRef, text: string, startsConversation: boolean, arrival?: Arrival): void {
    const key = keyOf(thread);
    // An answer that went out while ingress was still returning needs no status any more.
    if (!this.#thinking.has(key) && !arrival?.answered) this.#status(thread, THINKING_STATUS);
    if (!startsConversation) return;
    const title = threadTitle(text);
    if (title === null) return;
    this.#track(
      this.#call("assistant.threads.setTitle", (client, token) =>
        client.assistant.threads.setTitle({
          token,
          channel_id: thread.channel,
          thread_ts: thread.threadTs,
          title,
        }),
      ),
    );
  }

  /**
   * Something was delivered to `target` (an answer, a failure notice) or its run ended: the
   * thinking status, if shown there, is cleared. Slack clears it itself on a reply, but only if
   * the status was set first; clearing in order after it is what makes the order certain.
   */
  settled(target: string): void {
    let thread: ThreadRef;
    try {
      const decoded = decodeReplyTarget(target);
      if (decoded.threadTs === undefined) return;
      thread = { channel: decoded.channel, threadTs: decoded.threadTs };
    } catch {
      return;
    }
    const key = keyOf(thread);
    for (const arrival of this.#pending.get(key) ?? []) arrival.answered = true;
    if (this.#thinking.has(key)) this.#status(thread, "");
  }

  /** A message in `thread` is on its way to ingress: an answer in the thread meanwhile is noted on it. */
  #arrive(thread: ThreadRef): Arrival {
    const arrival: Arrival = { answered: false };
    const key = keyOf(thread);
    const pending = this.#pending.get(key) ?? new Set<Arrival>();
    pending.add(arrival);
    this.#pending.set(key, pending);
    return arrival;
  }

  /** Stops refreshing statuses and resolves once every call begun so far has ended (shutdown, tests). */
  async close(): Promise<void> {
    for (const stop of this.#refreshing.values()) stop.abort();
    this.#refreshing.clear();
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /** setStatus calls for one thread go one after another, so a clear never overtakes its set. */
  #status(thread: ThreadRef, status: string): void {
    const key = keyOf(thread);
    if (status === "") {
      this.#thinking.delete(key);
      this.#refreshing.get(key)?.abort();
      this.#refreshing.delete(key);
    } else if (!this.#thinking.has(key)) {
      this.#thinking.add(key);
      this.#keepShowing(thread);
    }
    this.#setStatus(thread, status);
  }

  /**
   * Slack drops a status after 2 minutes without a message: while the answer is still being worked
   * on, the status is set again every STATUS_REFRESH_MS, for at most MAX_THINKING_MS (a run whose
   * end the adapter never hears of then shows nothing, rather than thinking for ever).
   */
  #keepShowing(thread: ThreadRef): void {
    const key = keyOf(thread);
    const stop = new AbortController();
    this.#refreshing.get(key)?.abort();
    this.#refreshing.set(key, stop);
    const clock = this.#options.clock;
    const untilMs = clock.now() + MAX_THINKING_MS;
    void (async () => {
      while (!stop.signal.aborted) {
        try {
          await clock.sleep(STATUS_REFRESH_MS, stop.signal);
        } catch {
          return;
        }
        if (stop.signal.aborted || !this.#thinking.has(key)) return;
        if (clock.now() >= untilMs) break;
        this.#setStatus(thread, THINKING_STATUS);
      }
      if (this.#refreshing.get(key) === stop) this.#refreshing.delete(key);
      this.#thinking.delete(key);
    })();
  }

  #setStatus(thread: ThreadRef, status: string): void {
    const key = keyOf(thread);
    const next = (this.#chains.get(key) ?? Promise.resolve()).then(() =>
      this.#call("assistant.threads.setStatus", (client, token) =>
        client.assistant.threads.setStatus({
          token,
          channel_id: thread.channel,
          thread_ts: thread.threadTs,
          status,
        }),
      ),
    );
    this.#chains.set(key, next);
    void next.then(() => {
      if (this.#chains.get(key) === next) this.#chains.delete(key);
    });
    this.#track(next);
  }

  #track(work: Promise<void>): void {
    const tracked = work.finally(() => this.#inFlight.delete(tracked));
    this.#inFlight.add(tracked);
  }

  /** One assistant call; never rejects. A feature-off refusal turns the calls off for the workspace. */
  async #call(
    method: string,
    call: (client: webApi.WebClient, token: string) => Promise<unknown>,
  ): Promise<void> {
    while (this.#feature === "unknown" && this.#probe !== null) await this.#probe;
    if (this.#feature === "off") return;
    const attempt = this.#attempt(method, call);
    if (this.#feature === "unknown") {
      const probe = attempt.finally(() => {
        if (this.#probe === probe) this.#probe = null;
      });
      this.#probe = probe;
    }
    await attempt;
  }

  async #attempt(
    method: string,
    call: (client: webApi.WebClient, token: string) => Promise<unknown>,
  ): Promise<void> {
    try {
      const { botToken } = this.#options;
      await call(this.#options.client, typeof botToken === "string" ? botToken : botToken());
      this.#feature = "on";
    } catch (raw) {
      const error = toSwitchboardError(raw, method);
      const code = error.details?.slackError;
      if (typeof code === "string" && FEATURE_OFF_ERRORS.has(code)) {
        if (this.#feature === "off") return;
        this.#feature = "off";
        this.#thinking.clear();
        for (const stop of this.#refreshing.values()) stop.abort();
        this.#refreshing.clear();
        this.#options.logger.warn("slack.assistant_unavailable", {
          team: this.#options.team() ?? "unknown",
          method,
          slackError: code,
          hint: "Slack refused an assistant thread call, so suggested prompts, the thinking status and thread titles are off for this workspace until the gateway restarts; answers are unaffected. To have them, turn on Agents & AI Apps in the app's settings and add the assistant:write scope.",
        });
        return;
      }
      this.#options.logger.debug("slack.assistant_call_failed", {
        method,
        error: error.message,
        ...(isSwitchboardError(error, "platform_rate_limited") ? { rateLimited: true } : {}),
      });
    }
  }
}

function keyOf(thread: ThreadRef): string {
  return `${thread.channel}:${thread.threadTs}`;
}
