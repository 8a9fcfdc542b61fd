/**
 * The emulator's assistant threads (Agents & AI Apps): `assistant.threads.setStatus`,
 * `setSuggestedPrompts` and `setTitle`, what each thread shows now, and the app's feature switch.
 * With the feature off every call is refused (`missing_scope` unless told otherwise), as Slack
 * refuses an app without it.
 */

/** What one assistant thread shows now, and what was asked of it. */
export interface AssistantThreadState {
  channel: string;
  threadTs: string;
  /** The status under the thread now ("" when none): set by setStatus, cleared by a bot reply. */
  status: string;
  /** Every status a setStatus call set, in order ("" for a clear). */
  statusCalls: string[];
  title?: string;
  /** The last suggested prompts set, with their optional heading. */
  suggestedPrompts?: { title?: string; prompts: Array<{ title: string; message: string }> };
}

type Answer = { ok: true; fields?: Record<string, unknown> } | { ok: false; error: string };

/** Slack shows at most 4 suggested prompts. */
const MAX_PROMPTS = 4;

export class AssistantBoard {
  #enabled: boolean;
  #refusal = "missing_scope";
  readonly #threads = new Map<string, AssistantThreadState>();

  /** `enabledAtStart`: the feature's state at start and after clear(). */
  constructor(private readonly enabledAtStart: boolean) {
    this.#enabled = enabledAtStart;
  }

  /** Turns the app's Agents & AI Apps feature on or off; off refuses with `error`. */
  setFeature(enabled: boolean, error = "missing_scope"): void {
    this.#enabled = enabled;
    this.#refusal = error;
  }

  thread(channel: string, threadTs: string): AssistantThreadState | undefined {
    return this.#threads.get(`${channel}:${threadTs}`);
  }

  all(): AssistantThreadState[] {
    return [...this.#threads.values()];
  }

  /** The bot posted in a thread: Slack clears the thread's status on a reply. */
  botPosted(channel: string, threadTs: string | undefined): void {
    if (threadTs === undefined) return;
    const thread = this.#threads.get(`${channel}:${threadTs}`);
    if (thread) thread.status = "";
  }

  clear(): void {
    this.#threads.clear();
    this.#enabled = this.enabledAtStart;
    this.#refusal = "missing_scope";
  }

  /** Answers one `assistant.threads.*` call; null for a method it does not know. */
  answer(method: string, params: Record<string, string>): Answer | null {
    if (!(method in HANDLERS)) return null;
    if (!this.#enabled) return { ok: false, error: this.#refusal };
    const channel = params.channel_id;
    // Assistant threads live in the app's DM with the user.
    if (channel === undefined || !/^D[A-Z0-9]{2,}$/.test(channel))
      return { ok: false, error: "channel_not_found" };
    const threadTs = params.thread_ts;
    if (threadTs === undefined || !/^\d+\.\d+$/.test(threadTs))
      return { ok: false, error: "invalid_thread_ts" };
    const key = `${channel}:${threadTs}`;
    const thread = this.#threads.get(key) ?? { channel, threadTs, status: "", statusCalls: [] };
    const answer = HANDLERS[method]!(params, thread);
    if (answer.ok) this.#threads.set(key, thread);
    return answer;
  }
}

const HANDLERS: Record<string, (params: Record<string, string>, thread: AssistantThreadState) => Answer> = {
  "assistant.threads.setStatus": (params, thread) => {
    if (params.status === undefined) return { ok: false, error: "invalid_arguments" };
    thread.status = params.status;
    thread.statusCalls.push(params.status);
    return { ok: true };
  },
  "assistant.threads.setTitle": (params, thread) => {
    if (!params.title) return { ok: false, error: "invalid_arguments" };
    thread.title = params.title;
    return { ok: true };
  },
  "assistant.threads.setSuggestedPrompts": (params, thread) => {
    let prompts: unknown;
    try {
      prompts = JSON.parse(params.prompts ?? "");
    } catch {
      return { ok: false, error: "invalid_arguments" };
    }
    const valid =
      Array.isArray(prompts) &&
      prompts.length >= 1 &&
      prompts.length <= MAX_PROMPTS &&
      prompts.every(
        (p) =>
          typeof p === "object" &&
          p !== null &&
          typeof p.title === "string" &&
          p.title !== "" &&
          typeof p.message === "string" &&
          p.message !== "",
      );
    if (!valid) return { ok: false, error: "invalid_arguments" };
    thread.suggestedPrompts = {
      ...(params.title ? { title: params.title } : {}),
      prompts: (prompts as Array<{ title: string; message: string }>).map(({ title, message }) => ({
        title,
        message,
      })),
    };
    return { ok: true };
  },
};
