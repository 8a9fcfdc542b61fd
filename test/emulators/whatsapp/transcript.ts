/**
 * Per-user transcripts: every message between the business and one wa_id, in both directions, in
 * order, with the statuses each outbound message went through and the read marks and typing
 * indicators the business set on inbound ones.
 */

export type DeliveryStatus = "accepted" | "sent" | "delivered" | "read" | "failed";

export interface TranscriptEntry {
  direction: "in" | "out";
  wamid: string;
  /** The Cloud API type: text, image, interactive, template, reaction, … */
  type: string;
  /** Text body, caption, interactive body, or a template's body parameters joined by " | ". */
  text?: string;
  /** Reply buttons of an interactive message, or the button a user pressed. */
  buttons?: Array<{ id: string; title: string }>;
  media?: { id?: string; link?: string; mimeType?: string; filename?: string };
  template?: { name: string; language: string; parameters: string[] };
  replyTo?: string;
  /** biz_opaque_callback_data sent with the message. */
  callbackData?: string;
  atMs: number;
  /** Outbound: the last status Meta reported (or will). Inbound: "read" once the business marked it. */
  status: DeliveryStatus;
  statusHistory: Array<{ status: DeliveryStatus; atMs: number }>;
  failure?: { code: number; title: string };
  /** The send request, or the webhook's message item. */
  raw: unknown;
}

export interface ChatState {
  waId: string;
  entries: TranscriptEntry[];
  /** When the business showed the typing indicator (mark-as-read with typing_indicator). */
  typingAtMs: number[];
}

export class Transcripts {
  private readonly chats = new Map<string, ChatState>();
  private readonly byWamid = new Map<string, { waId: string; entry: TranscriptEntry }>();

  chat(waId: string): ChatState {
    let chat = this.chats.get(waId);
    if (!chat) {
      chat = { waId, entries: [], typingAtMs: [] };
      this.chats.set(waId, chat);
    }
    return chat;
  }

  has(waId: string): boolean {
    return this.chats.has(waId);
  }

  add(waId: string, entry: TranscriptEntry): TranscriptEntry {
    this.chat(waId).entries.push(entry);
    this.byWamid.set(entry.wamid, { waId, entry });
    return entry;
  }

  find(wamid: string): { waId: string; entry: TranscriptEntry } | undefined {
    return this.byWamid.get(wamid);
  }

  setStatus(wamid: string, status: DeliveryStatus, atMs: number): void {
    const found = this.byWamid.get(wamid);
    if (!found) return;
    found.entry.status = status;
    found.entry.statusHistory.push({ status, atMs });
  }

  waIds(): string[] {
    return [...this.chats.keys()];
  }

  clear(): void {
    this.chats.clear();
    this.byWamid.clear();
  }
}
