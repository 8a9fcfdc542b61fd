/**
 * `POST /{version}/{phone-number-id}/messages`: validates a send as the Cloud API does (text up
 * to 4096 characters, at most 3 reply buttons with titles up to 20 characters and unique ids up
 * to 256, captions up to 1024, templates by name, language and parameter count), applies the
 * throughput limit, the pair rate and the 24-hour window, and records what the user would see.
 * The same route marks an inbound message read, optionally with the typing indicator.
 */
import {
  ERRORS,
  type GraphAnswer,
  graphError,
  invalidParameter,
  type StatusError,
  statusError,
} from "./graph-errors.ts";
import type { SendLimits } from "./limits.ts";
import type { MediaStore } from "./media.ts";
import { newWamid } from "./payloads.ts";
import type { TranscriptEntry, Transcripts } from "./transcript.ts";

export const MAX_TEXT_CHARS = 4096;
export const MAX_CAPTION_CHARS = 1024;
export const MAX_INTERACTIVE_BODY_CHARS = 1024;
export const MAX_REPLY_BUTTONS = 3;
export const MAX_BUTTON_TITLE_CHARS = 20;
export const MAX_BUTTON_ID_CHARS = 256;
export const MAX_CALLBACK_DATA_CHARS = 512;

/** An approved template the emulated account has: name, language and how many body parameters. */
export interface TemplateSpec {
  name: string;
  language: string;
  bodyParameters: number;
}

/**
 * How a free-form message outside the 24-hour window fails. "status" (Meta's usual way): the send
 * is accepted with a wamid, then a `failed` status with 131047 follows; "response": the send
 * itself is refused with 131047.
 */
export type WindowFailure = "status" | "response";

export interface MessagesApiDeps {
  limits: SendLimits;
  transcripts: Transcripts;
  media: MediaStore;
  templates: () => TemplateSpec[];
  windowFailure: () => WindowFailure;
  now: () => number;
}

export type SendOutcome =
  | { kind: "refused"; answer: GraphAnswer }
  | { kind: "read"; answer: GraphAnswer }
  /** Accepted; `failure` set when Meta will report it failed (131047 outside the window). */
  | { kind: "accepted"; answer: GraphAnswer; waId: string; entry: TranscriptEntry; failure?: StatusError };

type Body = Record<string, unknown>;

const MEDIA_TYPES = ["image", "document", "audio", "video", "sticker"] as const;

export class MessagesApi {
  constructor(private readonly deps: MessagesApiDeps) {}

  handle(body: Body): SendOutcome {
    if (body.messaging_product !== "whatsapp")
      return refused(invalidParameter("The parameter messaging_product is required and must be whatsapp."));
    if (body.status === "read") return this.markRead(body);
    const to = body.to;
    if (typeof to !== "string" || !/^\+?\d{6,20}$/.test(to))
      return refused(invalidParameter("The parameter to is required and must be a phone number or wa_id."));
    const waId = to.replace(/^\+/, "");
    const type = typeof body.type === "string" ? body.type : "text";
    const callbackData = body.biz_opaque_callback_data;
    if (
      callbackData !== undefined &&
      (typeof callbackData !== "string" || callbackData.length > MAX_CALLBACK_DATA_CHARS)
    ) {
      return refused(
        invalidParameter(
          `biz_opaque_callback_data must be a string of at most ${MAX_CALLBACK_DATA_CHARS} characters.`,
        ),
      );
    }
    const content = this.readContent(type, body);
    if ("answer" in content) return refused(content.answer);

    const { limits } = this.deps;
    if (!limits.admitThroughput())
      return refused(graphError(400, ERRORS.throughput, ERRORS.throughput.details));
    if (!limits.admitPair(waId)) return refused(graphError(400, ERRORS.pairRate, ERRORS.pairRate.details));
    let failure: StatusError | undefined;
    if (type !== "template" && !limits.windowOpen(waId)) {
      limits.countWindowRefusal(waId);
      if (this.deps.windowFailure() === "response")
        return refused(graphError(400, ERRORS.reengagement, ERRORS.reengagement.details));
      failure = statusError(ERRORS.reengagement, ERRORS.reengagement.details);
    }
    limits.recordSend(waId);

    const nowMs = this.deps.now();
    const wamid = newWamid(waId);
    const context = body.context as { message_id?: unknown } | undefined;
    const entry: TranscriptEntry = {
      direction: "out",
      wamid,
      type,
      ...content.fields,
      ...(typeof context?.message_id === "string" ? { replyTo: context.message_id } : {}),
      ...(typeof callbackData === "string" ? { callbackData } : {}),
      atMs: nowMs,
      status: "accepted",
      statusHistory: [{ status: "accepted", atMs: nowMs }],
      raw: body,
    };
    this.deps.transcripts.add(waId, entry);
    const answer: GraphAnswer = {
      status: 200,
      body: {
        messaging_product: "whatsapp",
        contacts: [{ input: to, wa_id: waId }],
        messages: [type === "template" ? { id: wamid, message_status: "accepted" } : { id: wamid }],
      },
    };
    return failure === undefined
      ? { kind: "accepted", answer, waId, entry }
      : { kind: "accepted", answer, waId, entry, failure };
  }

  private markRead(body: Body): SendOutcome {
    const messageId = body.message_id;
    const found = typeof messageId === "string" ? this.deps.transcripts.find(messageId) : undefined;
    if (found?.entry.direction !== "in")
      return refused(
        invalidParameter(`message_id ${String(messageId)} is not a message this number received.`),
      );
    const typing = body.typing_indicator as { type?: unknown } | undefined;
    if (typing !== undefined && typing.type !== "text")
      return refused(invalidParameter('typing_indicator.type must be "text".'));
    const nowMs = this.deps.now();
    // Marking a message read marks every earlier message in the chat read too.
    const chat = this.deps.transcripts.chat(found.waId);
    for (const entry of chat.entries) {
      if (entry.direction === "in" && entry.atMs <= found.entry.atMs && entry.status !== "read")
        this.deps.transcripts.setStatus(entry.wamid, "read", nowMs);
    }
    if (typing !== undefined) chat.typingAtMs.push(nowMs);
    return { kind: "read", answer: { status: 200, body: { success: true } } };
  }

  private readContent(
    type: string,
    body: Body,
  ): { fields: Partial<TranscriptEntry> } | { answer: GraphAnswer } {
    if (type === "text") {
      const text = body.text as { body?: unknown } | undefined;
      if (typeof text?.body !== "string" || text.body.length === 0)
        return { answer: invalidParameter("The parameter text['body'] is required.") };
      if (text.body.length > MAX_TEXT_CHARS)
        return {
          answer: invalidParameter(`Param text['body'] must be at most ${MAX_TEXT_CHARS} characters long.`),
        };
      return { fields: { text: text.body } };
    }
    if (type === "interactive") return readInteractive(body.interactive);
    if (type === "template") return this.readTemplate(body.template);
    if ((MEDIA_TYPES as readonly string[]).includes(type)) return this.readMedia(type, body[type]);
    return { answer: invalidParameter(`Unsupported message type: ${type}.`) };
  }

  private readMedia(
    type: string,
    value: unknown,
  ): { fields: Partial<TranscriptEntry> } | { answer: GraphAnswer } {
    const media = value as
      | { id?: unknown; link?: unknown; caption?: unknown; filename?: unknown }
      | undefined;
    if (typeof media?.id !== "string" && typeof media?.link !== "string")
      return { answer: invalidParameter(`The parameter ${type} must have an id or a link.`) };
    let stored: ReturnType<MediaStore["get"]>;
    if (typeof media.id === "string") {
      stored = this.deps.media.get(media.id);
      if (!stored) return { answer: invalidParameter(`Invalid media id ${media.id}.`) };
    }
    if (media.caption !== undefined) {
      if (type === "audio" || type === "sticker")
        return { answer: invalidParameter(`${type} messages cannot have a caption.`) };
      if (typeof media.caption !== "string" || media.caption.length > MAX_CAPTION_CHARS)
        return {
          answer: invalidParameter(
            `Param ${type}['caption'] must be at most ${MAX_CAPTION_CHARS} characters long.`,
          ),
        };
    }
    const fields: Partial<TranscriptEntry> = {
      media: {
        ...(typeof media.id === "string" ? { id: media.id } : {}),
        ...(typeof media.link === "string" ? { link: media.link } : {}),
        ...(stored ? { mimeType: stored.mimeType } : {}),
        ...(typeof media.filename === "string" ? { filename: media.filename } : {}),
      },
    };
    if (typeof media.caption === "string") fields.text = media.caption;
    return { fields };
  }

  private readTemplate(value: unknown): { fields: Partial<TranscriptEntry> } | { answer: GraphAnswer } {
    const template = value as
      | { name?: unknown; language?: { code?: unknown }; components?: unknown }
      | undefined;
    if (typeof template?.name !== "string" || typeof template.language?.code !== "string")
      return { answer: invalidParameter("The parameter template requires name and language.code.") };
    const { name } = template;
    const language = template.language.code;
    const known = this.deps.templates().find((t) => t.name === name && t.language === language);
    if (!known)
      return {
        answer: graphError(
          404,
          ERRORS.templateMissing,
          `template name (${name}) does not exist in ${language}`,
        ),
      };
    const components = Array.isArray(template.components) ? template.components : [];
    const bodyComponent = components.find((c) => (c as { type?: unknown }).type === "body") as
      | { parameters?: Array<{ type?: unknown; text?: unknown }> }
      | undefined;
    const parameters = (bodyComponent?.parameters ?? []).map((p) =>
      typeof p.text === "string" ? p.text : "",
    );
    if (parameters.length !== known.bodyParameters)
      return {
        answer: graphError(
          400,
          ERRORS.templateParams,
          `body: number of localizable_params (${parameters.length}) does not match the expected number of params (${known.bodyParameters})`,
        ),
      };
    return { fields: { text: parameters.join(" | "), template: { name, language, parameters } } };
  }
}

function readInteractive(value: unknown): { fields: Partial<TranscriptEntry> } | { answer: GraphAnswer } {
  const interactive = value as
    | { type?: unknown; body?: { text?: unknown }; action?: { buttons?: unknown } }
    | undefined;
  if (interactive?.type !== "button")
    return { answer: invalidParameter("This emulator supports interactive messages of type button only.") };
  const body = interactive.body?.text;
  if (typeof body !== "string" || body.length === 0)
    return { answer: invalidParameter("The parameter interactive['body']['text'] is required.") };
  if (body.length > MAX_INTERACTIVE_BODY_CHARS)
    return {
      answer: buttonRule(
        `Body text length invalid. Min length: 1, Max length: ${MAX_INTERACTIVE_BODY_CHARS}`,
      ),
    };
  const buttons = interactive.action?.buttons;
  if (!Array.isArray(buttons) || buttons.length === 0 || buttons.length > MAX_REPLY_BUTTONS)
    return {
      answer: buttonRule(
        `Buttons count invalid. Min: 1, Max: ${MAX_REPLY_BUTTONS}; got ${Array.isArray(buttons) ? buttons.length : 0}`,
      ),
    };
  const read: Array<{ id: string; title: string }> = [];
  for (const button of buttons as Array<{ type?: unknown; reply?: { id?: unknown; title?: unknown } }>) {
    const { id, title } = button.reply ?? {};
    if (button.type !== "reply" || typeof id !== "string" || typeof title !== "string")
      return { answer: invalidParameter("Each button needs type reply and reply.id and reply.title.") };
    if (title.length === 0 || title.length > MAX_BUTTON_TITLE_CHARS)
      return {
        answer: buttonRule(
          `Button title length invalid. Min length: 1, Max length: ${MAX_BUTTON_TITLE_CHARS}`,
        ),
      };
    if (id.length === 0 || id.length > MAX_BUTTON_ID_CHARS)
      return {
        answer: buttonRule(`Button id length invalid. Min length: 1, Max length: ${MAX_BUTTON_ID_CHARS}`),
      };
    if (read.some((b) => b.id === id)) return { answer: buttonRule("Button ids must be unique.") };
    if (read.some((b) => b.title === title)) return { answer: buttonRule("Button titles must be unique.") };
    read.push({ id, title });
  }
  return { fields: { text: body, buttons: read } };
}

function buttonRule(details: string): GraphAnswer {
  return graphError(400, ERRORS.parameterValue, details);
}

function refused(answer: GraphAnswer): SendOutcome {
  return { kind: "refused", answer };
}
