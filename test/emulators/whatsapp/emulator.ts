/**
 * A WhatsApp Cloud API emulator on 127.0.0.1: the Graph API subset a WhatsApp channel uses
 * (`url` is the API root to give it in place of https://graph.facebook.com), and Meta's side of
 * the webhooks (signed POSTs to the subscribed URL, redelivered until answered 200). Test
 * controls are methods here.
 */

import { resetConnection } from "../fault-plan.ts";
import { type Fault, FaultPlan, faultAnswer, type GraphRoute } from "./faults.ts";
import {
  badToken,
  type GraphAnswer,
  invalidParameter,
  type StatusError,
  unsupportedRequest,
} from "./graph-errors.ts";
import { buildIncoming, type IncomingSpec } from "./incoming.ts";
import { DEFAULT_LIMITS, type LimitStats, type LimitsConfig, SendLimits } from "./limits.ts";
import { type FileFault, MediaStore, type StoredMedia } from "./media.ts";
import { MessagesApi, type TemplateSpec, type WindowFailure } from "./messages-api.ts";
import {
  type BusinessNumber,
  changeValue,
  type OutboundStatus,
  type WebhookBody,
  type WebhookContact,
  type WebhookMessage,
  type WebhookStatus,
  webhookBody,
} from "./payloads.ts";
import { type StatusPlan, StatusReports } from "./status-reports.ts";
import { type ChatState, type TranscriptEntry, Transcripts } from "./transcript.ts";
import { type WebhookDelivery, type WebhookDeliveryOptions, WebhookSender } from "./webhook.ts";

export interface WhatsAppEmulatorOptions {
  /** The token every Graph call must carry as `Authorization: Bearer …`. */
  accessToken?: string;
  /** Signs the webhooks (X-Hub-Signature-256). */
  appSecret?: string;
  business?: Partial<BusinessNumber>;
  limits?: Partial<LimitsConfig>;
  statuses?: StatusPlan;
  /** How a free-form send outside the 24-hour window fails; default "status" (as Meta does). */
  windowFailure?: WindowFailure;
  /** Approved templates; default one: `reengage` (en_US, one body parameter). */
  templates?: TemplateSpec[];
  /** `url`: the subscribed callback URL; deliveries wait until one is set. */
  webhook?: Partial<WebhookDeliveryOptions> & { url?: string };
  /** Milliseconds since epoch for timestamps, windows and limits. Default Date.now. */
  now?: () => number;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
}

export interface GraphCall {
  seq: number;
  route: GraphRoute;
  method: string;
  /** The path without the API root, e.g. `/v23.0/106540352242922/messages`. */
  path: string;
  /** The JSON body; for an upload, its form fields with the file summarised. Never the token. */
  body: unknown;
  atMs: number;
  fault?: Fault["kind"];
  /** Filled in when answered; undefined while hung or for a dropped connection. */
  response?: { status: number; body: unknown };
  answeredAtMs?: number;
}

export const DEFAULT_ACCESS_TOKEN = "EAAGemulatorSystemUserToken0123456789abcdef";
export const DEFAULT_APP_SECRET = "emulator-app-secret-0123456789abcdef";
export const DEFAULT_BUSINESS: BusinessNumber = {
  wabaId: "102290129340398",
  phoneNumberId: "106540352242922",
  displayPhoneNumber: "15550783881",
};
export const DEFAULT_TEMPLATES: TemplateSpec[] = [{ name: "reengage", language: "en_US", bodyParameters: 1 }];

export class WhatsAppEmulator {
  readonly accessToken: string;
  readonly appSecret: string;
  readonly business: BusinessNumber;
  readonly calls: GraphCall[] = [];
  readonly faults = new FaultPlan();
  readonly media = new MediaStore();
  templates: TemplateSpec[];
  windowFailure: WindowFailure;
  private readonly transcripts = new Transcripts();
  private readonly limits: SendLimits;
  private readonly webhook: WebhookSender;
  private readonly api: MessagesApi;
  private readonly now: () => number;
  private readonly port: number;
  private server: ReturnType<typeof Bun.serve> | null = null;
  private readonly statuses: StatusReports;
  private readonly profileNames = new Map<string, string>();

  constructor(options: WhatsAppEmulatorOptions = {}) {
    this.accessToken = options.accessToken ?? DEFAULT_ACCESS_TOKEN;
    this.appSecret = options.appSecret ?? DEFAULT_APP_SECRET;
    this.business = { ...DEFAULT_BUSINESS, ...options.business };
    this.templates = options.templates ?? DEFAULT_TEMPLATES;
    this.windowFailure = options.windowFailure ?? "status";
    this.now = options.now ?? Date.now;
    this.port = options.port ?? 0;
    this.limits = new SendLimits({ ...DEFAULT_LIMITS, ...options.limits }, this.now);
    this.webhook = new WebhookSender(
      this.appSecret,
      {
        redeliveryDelaysMs: options.webhook?.redeliveryDelaysMs ?? [50, 100, 200, 400, 800],
        attemptTimeoutMs: options.webhook?.attemptTimeoutMs ?? 10_000,
      },
      this.now,
    );
    if (options.webhook?.url) this.webhook.setUrl(options.webhook.url);
    this.statuses = new StatusReports(
      { business: this.business, transcripts: this.transcripts, webhook: this.webhook, now: this.now },
      options.statuses ?? { kind: "on" },
    );
    this.api = new MessagesApi({
      limits: this.limits,
      transcripts: this.transcripts,
      media: this.media,
      templates: () => this.templates,
      windowFailure: () => this.windowFailure,
      now: this.now,
    });
  }

  /** The API root (in place of https://graph.facebook.com). */
  get url(): string {
    if (!this.server)
      throw new Error("The emulator is not listening: call start() (or startWhatsAppEmulator()) first");
    return `http://127.0.0.1:${this.server.port}`;
  }

  start(): this {
    this.server = Bun.serve({
      hostname: "127.0.0.1",
      port: this.port,
      // Hung calls outlive Bun's default 10 s idle timeout.
      idleTimeout: 0,
      fetch: (request) => this.route(request),
    });
    return this;
  }

  /** Ends hung calls, pending status timers and webhook deliveries, then the server. */
  async close(): Promise<void> {
    this.statuses.clear();
    this.faults.releaseHung();
    await this.webhook.close();
    const server = this.server;
    this.server = null;
    await server?.stop(true);
  }

  /** Forgets calls, faults, transcripts, windows, limit counts and held statuses. */
  reset(): void {
    this.calls.length = 0;
    this.faults.clear();
    this.faults.releaseHung();
    this.transcripts.clear();
    this.limits.reset();
    this.statuses.clear();
  }

  // ── webhooks ─────────────────────────────────────────────────────────────

  /** Subscribes the app's callback URL (the gateway's /whatsapp/webhook). */
  setWebhookUrl(url: string | null): void {
    this.webhook.setUrl(url);
  }

  /**
   * A user sends the business a message: it opens (renews) their 24-hour window, enters their
   * transcript and is delivered in its own webhook POST. Media bytes become a downloadable media id.
   */
  incoming(spec: IncomingSpec): { message: WebhookMessage; delivery: WebhookDelivery } {
    const { message, contact } = this.receive(spec);
    const delivery = this.webhook.send(
      webhookBody(this.business, [changeValue(this.business, { contacts: [contact], messages: [message] })]),
    );
    return { message, delivery };
  }

  /**
   * Several user messages and statuses in one POST (one change whose `messages[]` and
   * `statuses[]` hold them all), as Meta sends when it has several pending.
   */
  incomingBatch(
    specs: IncomingSpec[],
    statuses: WebhookStatus[] = [],
  ): { messages: WebhookMessage[]; delivery: WebhookDelivery } {
    const received = specs.map((spec) => this.receive(spec));
    const contacts = new Map<string, WebhookContact>();
    for (const { contact } of received) contacts.set(contact.wa_id, contact);
    const messages = received.map((r) => r.message);
    const value = changeValue(this.business, {
      ...(contacts.size > 0 ? { contacts: [...contacts.values()] } : {}),
      ...(messages.length > 0 ? { messages } : {}),
      ...(statuses.length > 0 ? { statuses } : {}),
    });
    return { messages, delivery: this.webhook.send(webhookBody(this.business, [value])) };
  }

  /**
   * `waId` taps the reply button titled `button` under the business's message `wamid` (or sends
   * `{ forgedId }`, an id no button carries).
   */
  press(
    waId: string,
    wamid: string,
    button: string | { forgedId: string },
  ): { message: WebhookMessage; delivery: WebhookDelivery } {
    const found = this.transcripts.find(wamid);
    if (found?.entry.direction !== "out" || found.waId !== waId)
      throw new Error(`press: ${wamid} is not a business message to ${waId}`);
    let reply: { id: string; title: string };
    if (typeof button === "string") {
      const match = found.entry.buttons?.find((b) => b.title === button);
      if (!match) throw new Error(`press: message ${wamid} has no button "${button}"`);
      reply = match;
    } else reply = { id: button.forgedId, title: "Forged" };
    return this.incoming({ from: waId, buttonReply: reply, replyTo: wamid });
  }

  /** Delivers any body (a malformed one, a forged one, one without a signature) once or as Meta would. */
  deliverRaw(body: unknown, signature: WebhookDelivery["signature"] = "valid"): WebhookDelivery {
    return this.webhook.send(body as WebhookBody, signature);
  }

  /** Reports a status for an outbound message now, in its own POST (e.g. one that was held). */
  sendStatus(wamid: string, status: OutboundStatus, failure?: StatusError): WebhookDelivery {
    return this.statuses.post([this.statuses.statusFor(wamid, status, failure)]);
  }

  /** A status item for an outbound message, to send with `incomingBatch` or `sendStatus`. */
  statusFor(wamid: string, status: OutboundStatus, failure?: StatusError): WebhookStatus {
    return this.statuses.statusFor(wamid, status, failure);
  }

  /** What Meta reports after each accepted send (see StatusPlan); applies to the next sends. */
  get statusPlan(): StatusPlan {
    return this.statuses.plan;
  }

  set statusPlan(plan: StatusPlan) {
    this.statuses.plan = plan;
  }

  /** Sends every status held by the "held" plan, in order, one POST each. */
  releaseStatuses(): void {
    this.statuses.release();
  }

  heldStatusCount(): number {
    return this.statuses.heldCount();
  }

  /** Every webhook POST, with its attempts (statuses, retries, timestamps). */
  deliveries(): WebhookDelivery[] {
    return [...this.webhook.deliveries];
  }

  /** Retries every delivery waiting between attempts now, instead of after its delay. */
  redeliverNow(): void {
    this.webhook.redeliverNow();
  }

  /**
   * Calls `url` the way Meta checks a callback URL when it is saved: GET with hub.mode,
   * hub.verify_token and hub.challenge. The endpoint must answer 200 with the challenge as its body.
   */
  async verifyWebhook(
    url: string,
    params: { verifyToken: string; challenge?: string; mode?: string },
  ): Promise<{ status: number; body: string; challenge: string }> {
    const challenge = params.challenge ?? String(1_000_000_000 + Math.floor(Math.random() * 1_000_000_000));
    const target = new URL(url);
    target.searchParams.set("hub.mode", params.mode ?? "subscribe");
    target.searchParams.set("hub.verify_token", params.verifyToken);
    target.searchParams.set("hub.challenge", challenge);
    const response = await fetch(target, { headers: { "user-agent": "facebookplatform/1.0" } });
    return { status: response.status, body: await response.text(), challenge };
  }

  // ── transcripts, faults, limits ──────────────────────────────────────────

  /** Everything between the business and `waId`, oldest first (failed sends included). */
  transcript(waId: string): TranscriptEntry[] {
    return [...(this.transcripts.has(waId) ? this.transcripts.chat(waId).entries : [])];
  }

  /** The business's messages `waId` sees: sent ones that did not fail. */
  messages(waId: string): TranscriptEntry[] {
    return this.transcript(waId).filter((e) => e.direction === "out" && e.status !== "failed");
  }

  chat(waId: string): ChatState | undefined {
    return this.transcripts.has(waId) ? this.transcripts.chat(waId) : undefined;
  }

  /** The transcript entry of one message, either direction. */
  message(wamid: string): TranscriptEntry | undefined {
    return this.transcripts.find(wamid)?.entry;
  }

  /** Opens `waId`'s window as of `atMs` without a message (a user who wrote earlier). */
  openWindow(waId: string, atMs = this.now()): void {
    this.limits.openWindow(waId, atMs);
  }

  windowOpen(waId: string): boolean {
    return this.limits.windowOpen(waId);
  }

  setLimits(config: Partial<LimitsConfig>): void {
    this.limits.config = { ...this.limits.config, ...config };
  }

  limitStats(): LimitStats {
    return this.limits.snapshot();
  }

  /** The next `times` calls of `route` answer with `fault`. */
  injectFault(route: GraphRoute, fault: Fault, times = 1): void {
    this.faults.add(route, fault, times);
  }

  releaseHung(): void {
    this.faults.releaseHung();
  }

  hungCount(): number {
    return this.faults.hungCount();
  }

  /** Stores bytes the business could send by id (as if uploaded earlier). */
  addMedia(bytes: Uint8Array, mimeType: string, fault?: FileFault): StoredMedia {
    return this.media.add(bytes, mimeType, "business", undefined, fault);
  }

  callsOf(route: GraphRoute): GraphCall[] {
    return this.calls.filter((call) => call.route === route);
  }

  // ── waiting ──────────────────────────────────────────────────────────────

  /** Resolves with the probe's first truthy value; rejects after timeoutMs naming `what`. */
  async waitFor<T>(
    probe: () => T | undefined | null | false,
    timeoutMs = 2_000,
    what = "condition",
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = probe();
      if (value) return value;
      if (Date.now() >= deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
      await Bun.sleep(5);
    }
  }

  waitForCall(route: GraphRoute, predicate: (call: GraphCall) => boolean = () => true, timeoutMs = 2_000) {
    return this.waitFor(
      () => this.calls.find((call) => call.route === route && predicate(call)),
      timeoutMs,
      `a ${route} call`,
    );
  }

  /** The first message from the business that `waId` sees and that matches. */
  waitForMessage(
    waId: string,
    predicate: (entry: TranscriptEntry) => boolean = () => true,
    timeoutMs = 2_000,
  ): Promise<TranscriptEntry> {
    return this.waitFor(
      () => this.messages(waId).find(predicate),
      timeoutMs,
      `a business message to ${waId}`,
    );
  }

  /** Until the delivery was answered 200, or given up; resolves with it either way. */
  waitForDelivery(delivery: WebhookDelivery, timeoutMs = 2_000): Promise<WebhookDelivery> {
    return this.waitFor(
      () => (delivery.state === "delivered" || delivery.state === "gave_up" ? delivery : undefined),
      timeoutMs,
      `webhook delivery ${delivery.id} to finish`,
    );
  }

  // ── HTTP ─────────────────────────────────────────────────────────────────

  private async route(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/whatsapp_business/attachments/") return this.download(request, url);
    const match = /^\/(v\d+\.\d+)\/([^/]+)(?:\/(messages|media))?$/.exec(url.pathname);
    if (!match) return json(unsupportedRequest("get", url.pathname.split("/").pop() ?? "").body, 400);
    const [, , objectId = "", edge] = match;
    const route: GraphRoute | null =
      request.method === "POST" && edge === "messages"
        ? "messages"
        : request.method === "POST" && edge === "media"
          ? "media_upload"
          : request.method === "GET" && edge === undefined
            ? "media_info"
            : null;
    if (route === null)
      return json(unsupportedRequest(request.method === "GET" ? "get" : "post", objectId).body, 400);

    let body: unknown;
    let upload: { bytes: Uint8Array; mimeType: string; filename?: string; product: unknown } | undefined;
    try {
      if (route === "media_upload") {
        upload = await readUpload(request);
        body = {
          messaging_product: upload.product,
          type: upload.mimeType,
          file: { bytes: upload.bytes.byteLength, ...(upload.filename ? { filename: upload.filename } : {}) },
        };
      } else if (route === "messages") body = await request.json();
    } catch {
      return json(invalidParameter("The request body could not be parsed.").body, 400);
    }
    const call: GraphCall = {
      seq: this.calls.length + 1,
      route,
      method: request.method,
      path: url.pathname,
      body,
      atMs: this.now(),
    };
    this.calls.push(call);
    if (request.headers.get("authorization") !== `Bearer ${this.accessToken}`)
      return this.answer(call, badToken());
    if (route !== "media_info" && objectId !== this.business.phoneNumberId)
      return this.answer(call, unsupportedRequest("post", objectId));

    const fault = this.faults.take(route);
    if (fault) call.fault = fault.kind;
    switch (fault?.kind) {
      case "server_error":
      case "rate_limited":
      case "graph_error":
        return this.answer(call, faultAnswer(fault));
      case "reset":
        return resetConnection();
      case "hang":
        await this.faults.hang();
        if (!this.server) return resetConnection();
        break;
      case "reset_after_effect":
        call.response = this.perform(route, objectId, body as Record<string, unknown>, upload);
        return resetConnection();
      case undefined:
        break;
    }
    return this.answer(call, this.perform(route, objectId, body as Record<string, unknown>, upload));
  }

  private perform(
    route: GraphRoute,
    objectId: string,
    body: Record<string, unknown>,
    upload: { bytes: Uint8Array; mimeType: string; filename?: string; product: unknown } | undefined,
  ): GraphAnswer {
    if (route === "messages") {
      const outcome = this.api.handle(body ?? {});
      if (outcome.kind === "accepted") this.statuses.afterSend(outcome.entry.wamid, outcome.failure);
      return outcome.answer;
    }
    if (route === "media_upload") {
      if (!upload) return invalidParameter("The parameter file is required.");
      if (upload.product !== "whatsapp")
        return invalidParameter("The parameter messaging_product is required and must be whatsapp.");
      const refused = this.media.checkUpload(upload.bytes, upload.mimeType);
      if (refused) return refused;
      const stored = this.media.add(upload.bytes, upload.mimeType, "business", upload.filename);
      return { status: 200, body: { id: stored.id } };
    }
    const stored = this.media.get(objectId);
    if (!stored) return unsupportedRequest("get", objectId);
    return {
      status: 200,
      body: {
        messaging_product: "whatsapp",
        url: `${this.url}/whatsapp_business/attachments/?mid=${stored.id}&ext=${Math.floor(this.now() / 1000)}&hash=${stored.sha256.slice(0, 16)}`,
        mime_type: stored.mimeType,
        sha256: stored.sha256,
        file_size: stored.bytes.byteLength,
        id: stored.id,
      },
    };
  }

  private download(request: Request, url: URL): Response {
    const mid = url.searchParams.get("mid") ?? "";
    const call: GraphCall = {
      seq: this.calls.length + 1,
      route: "media_download",
      method: request.method,
      path: `${url.pathname}?mid=${mid}`,
      body: null,
      atMs: this.now(),
    };
    this.calls.push(call);
    if (request.headers.get("authorization") !== `Bearer ${this.accessToken}`) {
      call.response = { status: 401, body: "" };
      return new Response("", { status: 401 });
    }
    const fault = this.faults.take("media_download");
    if (fault) call.fault = fault.kind;
    if (fault?.kind === "reset") return resetConnection();
    if (fault?.kind === "server_error" || fault?.kind === "graph_error" || fault?.kind === "rate_limited") {
      const status = fault.kind === "rate_limited" ? (fault.status ?? 429) : (fault.status ?? 500);
      call.response = { status, body: "" };
      return new Response("", { status });
    }
    if (!this.media.get(mid)) {
      call.response = { status: 404, body: "" };
      return new Response("", { status: 404 });
    }
    const response = this.media.serve(mid);
    call.response = { status: response.status, body: null };
    return response;
  }

  private answer(call: GraphCall, answer: GraphAnswer): Response {
    call.response = { status: answer.status, body: answer.body };
    call.answeredAtMs = this.now();
    return json(answer.body, answer.status, answer.headers);
  }

  // ── statuses ─────────────────────────────────────────────────────────────

  private receive(spec: IncomingSpec): { message: WebhookMessage; contact: WebhookContact } {
    const nowMs = this.now();
    const message = buildIncoming(
      spec,
      this.business,
      (m) => {
        const stored = this.media.add(m.bytes, m.mimeType, "user", m.filename);
        return { id: stored.id, sha256: stored.sha256 };
      },
      nowMs,
    );
    const atMs = Number(message.timestamp) * 1000;
    this.limits.openWindow(spec.from, atMs);
    const content = message[message.type] as { body?: string; caption?: string; id?: string } | undefined;
    const text = content?.body ?? content?.caption;
    const reply = "buttonReply" in spec ? spec.buttonReply : "listReply" in spec ? spec.listReply : undefined;
    this.transcripts.add(spec.from, {
      direction: "in",
      wamid: message.id,
      type: message.type,
      ...(text === undefined ? {} : { text }),
      ...(reply ? { buttons: [{ id: reply.id, title: reply.title }] } : {}),
      ...(content?.id === undefined ? {} : { media: { id: content.id } }),
      ...(spec.replyTo === undefined ? {} : { replyTo: spec.replyTo }),
      atMs,
      status: "delivered",
      statusHistory: [{ status: "delivered", atMs }],
      raw: message,
    });
    // A profile name, once seen, stays the user's until they change it.
    const name = spec.name ?? this.profileNames.get(spec.from) ?? "Test User";
    this.profileNames.set(spec.from, name);
    return { message, contact: { profile: { name }, wa_id: spec.from } };
  }
}

/** Creates and starts an emulator; remember `await emulator.close()` in afterEach/afterAll. */
export function startWhatsAppEmulator(options: WhatsAppEmulatorOptions = {}): WhatsAppEmulator {
  return new WhatsAppEmulator(options).start();
}

function json(body: unknown, status: number, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

async function readUpload(
  request: Request,
): Promise<{ bytes: Uint8Array; mimeType: string; filename?: string; product: unknown }> {
  const form = await request.formData();
  const file = form.get("file");
  if (file === null || typeof file === "string") throw new Error("no file part");
  const part = file as unknown as File;
  const typeField = form.get("type");
  const upload: { bytes: Uint8Array; mimeType: string; filename?: string; product: unknown } = {
    bytes: new Uint8Array(await part.arrayBuffer()),
    mimeType: typeof typeField === "string" && typeField !== "" ? typeField : part.type,
    product: form.get("messaging_product"),
  };
  if (part.name) upload.filename = part.name;
  return upload;
}
