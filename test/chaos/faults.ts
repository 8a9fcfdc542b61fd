/**
 * Platform faults at a configurable rate: after a call to one of the chosen API methods, the next
 * call of that method fails with probability `rate` (a fault is armed only when none is pending, so
 * faults never pile up while a chat is quiet and a retried send meets each one independently).
 * Until every Telegram fault kind has been injected once, a fault is armed after every call that
 * can take a kind not yet seen, so even a short run meets every kind, whatever the dice say.
 * Every Telegram bot (the default and the named accounts') gets its own faults from one plan.
 * The faults are the ones real platforms produce: 429 with a retry-after, 5xx, a connection reset
 * before or after the call took effect, and hung calls. WhatsApp gets 429s, 5xx and resets after
 * the effect (the send's outcome is then its status webhook's to tell); a reset before the effect
 * would only wait out WHATSAPP_STATUS_WAIT_MS for a status that never comes, which the e2e tests cover.
 * Status reactions (on in DMs) are no replies: Matrix faults are armed by and injected into
 * `m.room.message` sends only, and no Telegram or Discord reaction method is faulted.
 * Matrix sends get M_LIMIT_EXCEEDED with retry_after_ms, 5xx and resets after the homeserver stored
 * the event (retried with the same txnId, so shown once); like Telegram's, each kind is met once
 * before the dice choose.
 */
import type { DiscordEmulator, Fault as DiscordFault, RestRoute } from "../emulators/discord/index.ts";
import type { MatrixEmulator, Fault as MatrixFault } from "../emulators/matrix/index.ts";
import type { TelegramEmulator, Fault as TelegramFault } from "../emulators/telegram/index.ts";
import type { WhatsAppEmulator, Fault as WhatsAppFault } from "../emulators/whatsapp/index.ts";
import type { Random } from "./random.ts";
import { isMatrixReply } from "./snapshot.ts";

/** How long a hung Telegram call stays open before the driver releases it. */
const HANG_RELEASE_MS = 4_000;
const TELEGRAM_METHODS = ["sendMessage", "editMessageText", "deleteMessage", "getUpdates"] as const;
const DISCORD_ROUTES: readonly RestRoute[] = [
  "POST /channels/:id/messages",
  "PATCH /channels/:id/messages/:id",
  "POST /channels/:id/typing",
];

export interface FaultCounts {
  rateLimited: number;
  serverErrors: number;
  resets: number;
  hangs: number;
}

export class FaultInjector {
  readonly counts: FaultCounts = { rateLimited: 0, serverErrors: 0, resets: 0, hangs: 0 };
  private hangReleaseAtMs: number | null = null;
  /** Calls of each Telegram bot looked at so far (same order as `telegrams`). */
  private readonly telegramSeen: number[];
  private discordSeen = 0;
  private whatsappSeen = 0;
  private matrixSeen = 0;
  /**
   * Matrix send fault kinds the homeserver has not yet answered a reply with: each is armed before
   * any is chosen at random (a kind armed and then cleared, unmet, is armed again).
   */
  private readonly unmetMatrixKinds = new Set<MatrixFault["kind"]>([
    "rate_limited",
    "server_error",
    "reset_after_effect",
  ]);
  /** Methods and routes with a fault armed and not yet consumed. */
  private readonly pending = new Set<string>();
  /** Off until `enable()`: the run's opening plays its traffic kinds without faults. */
  private enabled = false;
  /** Telegram fault kinds not yet injected: each is chosen once before any is chosen at random. */
  private readonly unseenTelegramKinds = new Set<TelegramFault["kind"]>([
    "rate_limited",
    "server_error",
    "reset",
    "reset_after_effect",
    "hang",
  ]);

  constructor(
    /** Every Telegram bot of the run (the default one and the named accounts'): each gets faults. */
    private readonly telegrams: readonly TelegramEmulator[],
    private readonly discord: DiscordEmulator,
    private readonly whatsapp: WhatsAppEmulator,
    private readonly matrix: MatrixEmulator,
    private readonly random: Random,
    /** Probability that the call after a call of the same method fails. 0 disables faults. */
    private readonly rate: number,
  ) {
    this.telegramSeen = telegrams.map(() => 0);
  }

  get total(): number {
    const c = this.counts;
    return c.rateLimited + c.serverErrors + c.resets + c.hangs;
  }

  /** Looks at the calls since the last tick and arms the next faults. Call it every ~200 ms. */
  tick(nowMs: number): void {
    // The clock starts when a call actually hangs: a hang armed long before its call arrives must
    // not hold that call (and its late effect) until some later release.
    if (this.hangReleaseAtMs === null && this.telegrams.some((bot) => bot.hungCount() > 0)) {
      this.hangReleaseAtMs = nowMs + HANG_RELEASE_MS;
    }
    if (this.hangReleaseAtMs !== null && nowMs >= this.hangReleaseAtMs) {
      for (const bot of this.telegrams) bot.releaseHung();
      this.hangReleaseAtMs = null;
    }
    const telegramCalls = this.telegrams.flatMap((bot, index) => {
      const calls = bot.calls
        .slice(this.telegramSeen[index])
        .map((c) => ({ key: `tg${index} ${c.method}`, c }));
      this.telegramSeen[index] = bot.calls.length;
      return calls;
    });
    const discordCalls = this.discord.restCalls
      .slice(this.discordSeen)
      .map((c) => ({ key: `dc ${c.route}`, c }));
    this.discordSeen += discordCalls.length;
    // Sends and read marks share the route.
    const whatsappCalls = this.whatsapp.calls
      .slice(this.whatsappSeen)
      .filter((c) => c.route === "messages")
      .map((c) => ({ key: "wa messages", c }));
    this.whatsappSeen = this.whatsapp.calls.length;
    const matrixCalls = this.matrix.calls
      .slice(this.matrixSeen)
      .filter((c) => c.operation === "send" && isMatrixReply(c))
      .map((c) => ({ key: "mx send", c }));
    this.matrixSeen = this.matrix.calls.length;
    const called = new Set<string>();
    for (const { key, c } of [...telegramCalls, ...discordCalls, ...whatsappCalls, ...matrixCalls]) {
      if (c.fault !== undefined) this.pending.delete(key);
      called.add(key);
    }
    for (const { c } of matrixCalls) if (c.fault !== undefined) this.unmetMatrixKinds.delete(c.fault);
    if (!this.enabled) return;
    for (const [index, bot] of this.telegrams.entries()) {
      for (const method of TELEGRAM_METHODS) {
        const key = `tg${index} ${method}`;
        if (
          called.has(key) &&
          !this.pending.has(key) &&
          (this.unseenFor(method) || this.random.chance(this.rate))
        ) {
          this.armTelegram(bot, method);
          this.pending.add(key);
        }
      }
    }
    for (const route of DISCORD_ROUTES) {
      const key = `dc ${route}`;
      if (called.has(key) && !this.pending.has(key) && this.random.chance(this.rate)) {
        this.armDiscord(route);
        this.pending.add(key);
      }
    }
    if (called.has("wa messages") && !this.pending.has("wa messages") && this.random.chance(this.rate)) {
      this.armWhatsApp();
      this.pending.add("wa messages");
    }
    // A kind not yet met is armed at once, not after the next send: a short run has few Matrix replies.
    const matrixUnmet = this.rate > 0 && this.unmetMatrixKinds.size > 0;
    if (
      !this.pending.has("mx send") &&
      (matrixUnmet || (called.has("mx send") && this.random.chance(this.rate)))
    ) {
      this.armMatrix();
      this.pending.add("mx send");
    }
  }

  /** Whether the homeserver has answered a reply with every Matrix send fault kind yet. */
  get everyMatrixFaultMet(): boolean {
    return this.unmetMatrixKinds.size === 0;
  }

  /** Starts arming faults (from the next tick on). */
  enable(): void {
    this.enabled = true;
  }

  /** Disarms everything planned and releases hung Telegram calls (before the run settles). */
  quiesce(): void {
    this.enabled = false;
    this.pending.clear();
    for (const bot of this.telegrams) {
      bot.faults.clear();
      bot.releaseHung();
    }
    this.discord.clearFaults();
    this.whatsapp.faults.clear();
    this.matrix.clearFaults();
  }

  /** A kind not yet injected that a call of `method` can take. */
  private unseenFor(method: (typeof TELEGRAM_METHODS)[number]): boolean {
    if (this.rate === 0) return false;
    return this.telegramFaults(method).some((f) => this.unseenTelegramKinds.has(f.kind));
  }

  private telegramFaults(method: (typeof TELEGRAM_METHODS)[number]): TelegramFault[] {
    const sends = method !== "getUpdates";
    return [
      { kind: "rate_limited", retryAfterSeconds: 1 },
      { kind: "server_error", status: 502, description: "Bad Gateway" },
      { kind: "reset" },
      ...(sends ? ([{ kind: "reset_after_effect" }, { kind: "hang" }] as const) : []),
    ];
  }

  private armTelegram(bot: TelegramEmulator, method: (typeof TELEGRAM_METHODS)[number]): void {
    const faults = this.telegramFaults(method);
    // A short run still meets every kind: an unseen one first, then the seeded random choice.
    const unseen = faults.filter((f) => this.unseenTelegramKinds.has(f.kind));
    const fault = this.random.pick(unseen.length > 0 ? unseen : faults);
    this.unseenTelegramKinds.delete(fault.kind);
    bot.injectFault(method, fault);
    this.count(fault.kind);
  }

  private armDiscord(route: RestRoute): void {
    const faults: DiscordFault[] = [
      { kind: "rate_limit", retryAfterMs: 1_000 },
      { kind: "server_error", status: 502 },
      { kind: "server_error", status: 503 },
      { kind: "reset", afterCommit: this.random.chance(0.5) },
    ];
    // A Discord hang lasts until the client's own timeout: keep it rare.
    const fault: DiscordFault = this.random.chance(0.1)
      ? { kind: "hang", afterCommit: true }
      : this.random.pick(faults);
    this.discord.failNext(route, fault);
    this.count(fault.kind);
  }

  private armWhatsApp(): void {
    const faults: WhatsAppFault[] = [
      { kind: "rate_limited", retryAfterSeconds: 1 },
      { kind: "server_error", status: 503, code: 2 },
      { kind: "reset_after_effect" },
    ];
    const fault = this.random.pick(faults);
    this.whatsapp.injectFault("messages", fault);
    this.count(fault.kind);
  }

  private armMatrix(): void {
    const faults: MatrixFault[] = [
      { kind: "rate_limited", retryAfterMs: this.random.int(300, 1_000) },
      { kind: "server_error", status: this.random.pick([500, 502, 503]) },
      { kind: "reset_after_effect" },
    ];
    const unmet = faults.filter((f) => this.unmetMatrixKinds.has(f.kind));
    const fault = this.random.pick(unmet.length > 0 ? unmet : faults);
    this.matrix.failNext("send", fault, { eventType: "m.room.message" });
    this.count(fault.kind);
  }

  private count(kind: string): void {
    if (kind === "rate_limited" || kind === "rate_limit") this.counts.rateLimited += 1;
    else if (kind === "server_error") this.counts.serverErrors += 1;
    else if (kind === "hang") this.counts.hangs += 1;
    else this.counts.resets += 1;
  }
}
