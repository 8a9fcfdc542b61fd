/**
 * The emulator's test controls over HTTP (JSON under /__control/), and a client for them, so a
 * test can drive an emulator that lives in another process.
 */
import type { Chat, Message, Update } from "grammy/types";
import type { WebhookRegistration } from "./bot-api.ts";
import type { UpdateBody } from "./builders.ts";
import type { VisibleMessage } from "./chats.ts";
import type { ApiCall, IncomingSpec, TelegramEmulator } from "./emulator.ts";
import type { Fault } from "./faults.ts";
import type { RateLimitStats } from "./rate-limit.ts";
import type { WebhookAttempt } from "./webhook.ts";

export interface EmulatorState {
  pendingUpdateIds: number[];
  confirmedUpdateIds: number[];
  droppedUpdateIds: number[];
  webhook: WebhookRegistration | null;
  webhookAttempts: WebhookAttempt[];
  rateLimitStats: RateLimitStats | null;
  hungCalls: number;
}

type Body = Record<string, unknown>;

export async function handleControlRequest(
  emulator: TelegramEmulator,
  request: Request,
  url: URL,
): Promise<Response> {
  const route = `${request.method} ${url.pathname.slice("/__control".length)}`;
  let body: Body = {};
  if (request.method === "POST") {
    try {
      body = (await request.json()) as Body;
    } catch {
      return reply({ error: "control request body must be JSON" }, 400);
    }
  }
  try {
    switch (route) {
      case "POST /updates":
        return reply({ update: emulator.pushUpdate(body.update as UpdateBody) });
      case "POST /incoming":
        return reply(emulator.incoming(body.spec as IncomingSpec));
      case "POST /incoming-edit":
        return reply(emulator.incomingEdit(Number(body.chatId), Number(body.messageId), String(body.text)));
      case "POST /deliver-again":
        return reply({ update: emulator.deliverAgain(Number(body.updateId)) });
      case "POST /faults":
        emulator.injectFault(String(body.method), body.fault as Fault, Number(body.times ?? 1));
        return reply({ ok: true });
      case "POST /release-hung":
        emulator.releaseHung();
        return reply({ ok: true });
      case "POST /chats":
        emulator.addChat(body.chat as Chat);
        return reply({ ok: true });
      case "POST /topics":
        emulator.addTopic(Number(body.chatId), Number(body.threadId), String(body.name));
        return reply({ ok: true });
      case "POST /block":
        emulator.blockBot(Number(body.userId));
        return reply({ ok: true });
      case "POST /rate-limits":
        emulator.setRateLimits(body.enabled === true);
        return reply({ ok: true });
      case "GET /calls": {
        const method = url.searchParams.get("method");
        return reply({ calls: method ? emulator.callsOf(method) : emulator.calls });
      }
      case "GET /messages":
        return reply({ messages: emulator.messages(Number(url.searchParams.get("chat_id"))) });
      case "GET /state":
        return reply(stateOf(emulator));
      default:
        return reply({ error: `unknown control route ${route}` }, 404);
    }
  } catch (error) {
    return reply({ error: error instanceof Error ? error.message : String(error) }, 400);
  }
}

function stateOf(emulator: TelegramEmulator): EmulatorState {
  return {
    pendingUpdateIds: emulator.pendingUpdateIds(),
    confirmedUpdateIds: emulator.confirmedUpdateIds(),
    droppedUpdateIds: emulator.droppedUpdateIds(),
    webhook: emulator.webhookRegistration(),
    webhookAttempts: emulator.webhookAttempts(),
    rateLimitStats: emulator.rateLimitStats(),
    hungCalls: emulator.faults.hungCount(),
  };
}

function reply(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** Drives an emulator in another process through its /__control/ routes. */
export class TelegramEmulatorRemote {
  constructor(readonly url: string) {}

  async pushUpdate(update: UpdateBody): Promise<Update> {
    return (await this.post<{ update: Update }>("/updates", { update })).update;
  }

  incoming(spec: IncomingSpec): Promise<{ update: Update; message: Message }> {
    return this.post("/incoming", { spec });
  }

  incomingEdit(
    chatId: number,
    messageId: number,
    text: string,
  ): Promise<{ update: Update; editDateSeconds: number }> {
    return this.post("/incoming-edit", { chatId, messageId, text });
  }

  async deliverAgain(updateId: number): Promise<Update> {
    return (await this.post<{ update: Update }>("/deliver-again", { updateId })).update;
  }

  async injectFault(method: string, fault: Fault, times = 1): Promise<void> {
    await this.post("/faults", { method, fault, times });
  }

  async releaseHung(): Promise<void> {
    await this.post("/release-hung", {});
  }

  async addChat(chat: Chat): Promise<void> {
    await this.post("/chats", { chat });
  }

  async addTopic(chatId: number, threadId: number, name: string): Promise<void> {
    await this.post("/topics", { chatId, threadId, name });
  }

  async blockBot(userId: number): Promise<void> {
    await this.post("/block", { userId });
  }

  async setRateLimits(enabled: boolean): Promise<void> {
    await this.post("/rate-limits", { enabled });
  }

  async calls(method?: string): Promise<ApiCall[]> {
    const query = method ? `?method=${encodeURIComponent(method)}` : "";
    return (await this.get<{ calls: ApiCall[] }>(`/calls${query}`)).calls;
  }

  async messages(chatId: number): Promise<VisibleMessage[]> {
    return (await this.get<{ messages: VisibleMessage[] }>(`/messages?chat_id=${chatId}`)).messages;
  }

  state(): Promise<EmulatorState> {
    return this.get("/state");
  }

  /** Polls `probe` against remote state until it returns a truthy value. */
  async waitFor<T>(
    probe: () => Promise<T | undefined | null | false>,
    timeoutMs: number,
    what = "condition",
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() >= deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
      await Bun.sleep(20);
    }
  }

  private async post<T>(path: string, body: unknown): Promise<T> {
    return await this.expectOk<T>(
      await fetch(`${this.url}/__control${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
  }

  private async get<T>(path: string): Promise<T> {
    return await this.expectOk<T>(await fetch(`${this.url}/__control${path}`));
  }

  private async expectOk<T>(response: Response): Promise<T> {
    const body = (await response.json()) as T & { error?: string };
    if (!response.ok)
      throw new Error(`Telegram emulator control call failed (${response.status}): ${body.error}`);
    return body;
  }
}
