import { App, type Receiver, type ReceiverEvent } from "@slack/bolt";

/**
 * Bolt's App acknowledges an Events API event before its listeners run, which would confirm
 * delivery to Slack before ingress made it durable. This App hides the receiver's ack from Bolt
 * and acknowledges only after every listener resolved; when one rejects, processEvent rejects
 * without acking, so Slack delivers the event again.
 */
export class AckAfterListenersApp extends App {
  readonly #inFlight = new Set<Promise<void>>();

  override processEvent(event: ReceiverEvent): Promise<void> {
    const work = this.#processThenAck(event);
    this.#inFlight.add(work);
    const forget = () => this.#inFlight.delete(work);
    work.then(forget, forget);
    return work;
  }

  /** Resolves once every event being processed now has finished (acked or refused). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }

  async #processThenAck(event: ReceiverEvent): Promise<void> {
    await super.processEvent({ ...event, ack: async () => {} });
    await event.ack();
  }
}

/**
 * A Bolt Receiver for the gateway's own HTTP server: it opens no port; the adapter's route handler
 * calls `dispatch` after verifying the request, and awaits the listeners through it.
 */
export class GatewayHttpReceiver implements Receiver {
  #app: App | undefined;

  init(app: App): void {
    this.#app = app;
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  /** Runs one verified Events API body through Bolt; rejects when a listener rejected. */
  async dispatch(
    body: Record<string, unknown>,
    retryNum: number | undefined,
    retryReason: string | undefined,
  ): Promise<void> {
    if (this.#app === undefined)
      throw new Error("GatewayHttpReceiver.dispatch called before Bolt's App was created");
    await this.#app.processEvent({ body, ack: async () => {}, retryNum, retryReason });
  }
}
