import { randomUUID } from "node:crypto";
import type { ServerWebSocket } from "bun";
import type {
  BlockActionsBody,
  EnvelopeRecord,
  EventCallbackBody,
  SlackIdentity,
  SlashCommandBody,
} from "./types.ts";

export interface SocketData {
  connectionId: number;
}

export interface SocketModeHubOptions {
  identity: SlackIdentity;
  /** How long an envelope may stay un-acked before Slack sends it again. */
  redeliveryDelayMs: number;
  /** Redeliveries after the first delivery; Slack makes 3. */
  maxRedeliveries: number;
  now: () => number;
}

interface Envelope extends EnvelopeRecord {
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * The Socket Mode side of the emulator: single-use connection tickets, hello, envelope delivery
 * round-robin over open connections, acks, and redelivery of un-acked envelopes with
 * retry_attempt + 1, like Slack.
 */
export class SocketModeHub {
  readonly #tickets = new Set<string>();
  readonly #sockets: ServerWebSocket<SocketData>[] = [];
  readonly #envelopes = new Map<string, Envelope>();
  #nextConnectionId = 1;
  #roundRobin = 0;
  #connectionsEver = 0;

  constructor(private readonly options: SocketModeHubOptions) {}

  issueTicket(): string {
    const ticket = randomUUID();
    this.#tickets.add(ticket);
    return ticket;
  }

  /** True once per ticket issued by apps.connections.open. */
  redeemTicket(ticket: string | null): SocketData | null {
    if (ticket === null || !this.#tickets.delete(ticket)) return null;
    return { connectionId: this.#nextConnectionId++ };
  }

  onOpen(socket: ServerWebSocket<SocketData>): void {
    this.#sockets.push(socket);
    this.#connectionsEver += 1;
    socket.send(
      JSON.stringify({
        type: "hello",
        num_connections: this.#sockets.length,
        debug_info: {
          host: "switchboard-slack-emulator",
          build_number: 1,
          approximate_connection_time: 18060,
        },
        connection_info: { app_id: this.options.identity.appId },
      }),
    );
    for (const envelope of this.#envelopes.values()) {
      if (envelope.state !== "pending") continue;
      const lastAttempt = envelope.deliveries.at(-1)?.retryAttempt;
      this.#send(envelope, lastAttempt === undefined ? 0 : lastAttempt + 1);
    }
  }

  onMessage(message: string | Buffer): void {
    let frame: unknown;
    try {
      frame = JSON.parse(String(message));
    } catch {
      return;
    }
    if (typeof frame !== "object" || frame === null || !("envelope_id" in frame)) return;
    const envelope = this.#envelopes.get(String(frame.envelope_id));
    if (envelope === undefined || envelope.state === "acked") return;
    clearTimeout(envelope.timer);
    envelope.state = "acked";
    envelope.ackedAtMs = this.options.now();
  }

  onClose(socket: ServerWebSocket<SocketData>): void {
    const index = this.#sockets.indexOf(socket);
    if (index >= 0) this.#sockets.splice(index, 1);
  }

  /** Queues an event for delivery; it goes out at once when a connection is open. */
  push(
    payload: EventCallbackBody | BlockActionsBody | SlashCommandBody,
    type: Envelope["type"] = "events_api",
  ): string {
    const envelope: Envelope = { envelopeId: randomUUID(), payload, type, deliveries: [], state: "pending" };
    this.#envelopes.set(envelope.envelopeId, envelope);
    this.#send(envelope, 0);
    return envelope.envelopeId;
  }

  /** Sends the envelope again now as Slack's next retry (retry_attempt + 1). */
  redeliver(envelopeId: string): void {
    const envelope = this.#require(envelopeId);
    this.#send(envelope, (envelope.deliveries.at(-1)?.retryAttempt ?? -1) + 1);
  }

  /** Sends the very same frame again (same retry_attempt), as a duplicated delivery. */
  duplicate(envelopeId: string): void {
    const envelope = this.#require(envelopeId);
    this.#send(envelope, envelope.deliveries.at(-1)?.retryAttempt ?? 0);
  }

  envelope(envelopeId: string): EnvelopeRecord | undefined {
    const envelope = this.#envelopes.get(envelopeId);
    return envelope === undefined ? undefined : snapshot(envelope);
  }

  envelopes(): EnvelopeRecord[] {
    return [...this.#envelopes.values()].map(snapshot);
  }

  connectionCount(): number {
    return this.#sockets.length;
  }

  /** Connections opened since start, including closed ones (reconnects show up here). */
  connectionsEver(): number {
    return this.#connectionsEver;
  }

  /** Asks every client to reconnect, as Slack does before recycling a server. */
  disconnectAll(reason = "refresh_requested"): void {
    for (const socket of [...this.#sockets]) {
      socket.send(
        JSON.stringify({ type: "disconnect", reason, debug_info: { host: "switchboard-slack-emulator" } }),
      );
    }
  }

  /** Drops every connection without a goodbye. */
  dropAll(): void {
    for (const socket of [...this.#sockets]) socket.terminate();
  }

  clearEnvelopes(): void {
    for (const envelope of this.#envelopes.values()) clearTimeout(envelope.timer);
    this.#envelopes.clear();
  }

  close(): void {
    this.clearEnvelopes();
    for (const socket of [...this.#sockets]) socket.close(1001, "emulator closing");
    this.#sockets.length = 0;
  }

  #require(envelopeId: string): Envelope {
    const envelope = this.#envelopes.get(envelopeId);
    if (envelope === undefined)
      throw new Error(`No Socket Mode envelope ${envelopeId} was pushed to this emulator`);
    return envelope;
  }

  #send(envelope: Envelope, attempt: number): void {
    const socket = this.#pickSocket();
    if (socket === undefined) {
      if (envelope.state !== "acked") envelope.state = "pending";
      return;
    }
    if (envelope.state !== "acked") envelope.state = "delivered";
    envelope.deliveries.push({ retryAttempt: attempt, atMs: this.options.now() });
    socket.send(
      JSON.stringify({
        envelope_id: envelope.envelopeId,
        payload: envelope.payload,
        type: envelope.type,
        accepts_response_payload: envelope.type !== "events_api",
        retry_attempt: attempt,
        retry_reason: attempt === 0 ? "" : "timeout",
      }),
    );
    clearTimeout(envelope.timer);
    if (envelope.state === "acked") return;
    envelope.timer = setTimeout(() => {
      if (envelope.state === "acked") return;
      if (attempt >= this.options.maxRedeliveries) {
        envelope.state = "abandoned";
        return;
      }
      this.#send(envelope, attempt + 1);
    }, this.options.redeliveryDelayMs);
  }

  #pickSocket(): ServerWebSocket<SocketData> | undefined {
    if (this.#sockets.length === 0) return undefined;
    this.#roundRobin = (this.#roundRobin + 1) % this.#sockets.length;
    return this.#sockets[this.#roundRobin];
  }
}

function snapshot(envelope: Envelope): EnvelopeRecord {
  const { timer: _timer, ...record } = envelope;
  return { ...record, deliveries: [...record.deliveries] };
}
