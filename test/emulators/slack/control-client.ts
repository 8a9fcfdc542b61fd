import type { AssistantThreadState } from "./assistant-threads.ts";
import type {
  ApiCallRecord,
  EnvelopeRecord,
  EventCallbackBody,
  SlackFault,
  SlackIdentity,
  VisibleMessage,
} from "./types.ts";

/**
 * Typed access to a Slack emulator's `/__control/` endpoints from another process (for example a
 * test that drives an emulator started with `bun test/emulators/slack/main.ts`).
 */
export class SlackEmulatorControl {
  constructor(private readonly baseUrl: string) {}

  identity(): Promise<{ identity: SlackIdentity; apiUrl: string }> {
    return this.#call("GET", "identity");
  }

  async pushEvent(payload: EventCallbackBody): Promise<string> {
    return (await this.#call<{ envelopeId: string }>("POST", "events", { payload })).envelopeId;
  }

  async envelopes(): Promise<EnvelopeRecord[]> {
    return (await this.#call<{ envelopes: EnvelopeRecord[] }>("GET", "envelopes")).envelopes;
  }

  async redeliver(envelopeId: string): Promise<void> {
    await this.#call("POST", `envelopes/${encodeURIComponent(envelopeId)}/redeliver`);
  }

  async duplicate(envelopeId: string): Promise<void> {
    await this.#call("POST", `envelopes/${encodeURIComponent(envelopeId)}/duplicate`);
  }

  async failNext(method: string, fault: SlackFault, times = 1): Promise<void> {
    await this.#call("POST", "faults", { method, fault, times });
  }

  async setChannelRateLimit(intervalMs: number | null): Promise<void> {
    await this.#call("POST", "rate-limit", { intervalMs });
  }

  async rateLimitRejections(channel?: string): Promise<number> {
    const query = channel === undefined ? "" : `?channel=${encodeURIComponent(channel)}`;
    return (await this.#call<{ rejections: number }>("GET", `rate-limit${query}`)).rejections;
  }

  async setChannelState(
    channel: string,
    state: { archived?: boolean; botIsMember?: boolean },
  ): Promise<void> {
    await this.#call("POST", "channel-state", { channel, ...state });
  }

  async calls(method?: string): Promise<ApiCallRecord[]> {
    const query = method === undefined ? "" : `?method=${encodeURIComponent(method)}`;
    return (await this.#call<{ calls: ApiCallRecord[] }>("GET", `calls${query}`)).calls;
  }

  async messages(channel?: string): Promise<VisibleMessage[]> {
    const query = channel === undefined ? "" : `?channel=${encodeURIComponent(channel)}`;
    return (await this.#call<{ messages: VisibleMessage[] }>("GET", `messages${query}`)).messages;
  }

  sockets(): Promise<{ open: number; ever: number }> {
    return this.#call("GET", "sockets");
  }

  async requestReconnect(reason?: string): Promise<void> {
    await this.#call("POST", "sockets/reconnect", { reason });
  }

  async dropSockets(): Promise<void> {
    await this.#call("POST", "sockets/drop");
  }

  async setAssistantFeature(enabled: boolean, error?: string): Promise<void> {
    await this.#call("POST", "assistant", { enabled, error });
  }

  async assistantThreads(): Promise<AssistantThreadState[]> {
    return (await this.#call<{ threads: AssistantThreadState[] }>("GET", "assistant")).threads;
  }

  async reset(): Promise<void> {
    await this.#call("POST", "reset");
  }

  async #call<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.baseUrl}/__control/${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as T & { error?: string };
    if (!response.ok)
      throw new Error(`Slack emulator control ${method} ${path} failed (${response.status}): ${json.error}`);
    return json;
  }
}
