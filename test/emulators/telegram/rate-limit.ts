/**
 * Optional flood control modelled on Telegram's published limits, as sliding windows: about one
 * message per second in a chat, 20 per minute in a group, 30 per second per bot overall. A call
 * over a limit is answered 429 with retry_after (whole seconds until a slot frees up). Calls are
 * timed with sub-millisecond precision (`preciseNow`) unless the emulator is given a `now`.
 */

/**
 * Wall time in milliseconds with sub-millisecond precision. Telegram does not round a call's arrival
 * to the millisecond, so a sender whose windows are 999.6 ms apart must see its 429: `Date.now()`
 * would round both ends and could call them 1000 ms apart.
 */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

export interface Window {
  limit: number;
  windowMs: number;
}

export interface RateLimitConfig {
  perChat: Window;
  perGroup: Window;
  global: Window;
  /** Methods that count as sending a message. */
  countedMethods: string[];
}

export const TELEGRAM_RATE_LIMITS: RateLimitConfig = {
  perChat: { limit: 1, windowMs: 1_000 },
  perGroup: { limit: 20, windowMs: 60_000 },
  global: { limit: 30, windowMs: 1_000 },
  countedMethods: ["sendMessage", "editMessageText", "sendPhoto", "sendDocument", "sendVoice"],
};

export type RateLimitScope = "chat" | "group" | "global";

export interface ChatRateStats {
  accepted: number;
  rejected: number;
  firstAcceptedAtMs: number | null;
  lastAcceptedAtMs: number | null;
}

export interface RateLimitStats {
  accepted: number;
  rejected: number;
  rejectedByScope: Record<RateLimitScope, number>;
  perChat: Record<string, ChatRateStats>;
}

export type RateDecision =
  | { allowed: true }
  | { allowed: false; scope: RateLimitScope; retryAfterSeconds: number };

export class RateLimiter {
  private readonly chatLog = new Map<number, number[]>();
  private readonly groupLog = new Map<number, number[]>();
  private globalLog: number[] = [];
  private stats: RateLimitStats = emptyStats();

  constructor(
    private readonly config: RateLimitConfig,
    private readonly now: () => number,
  ) {}

  counts(method: string): boolean {
    return this.config.countedMethods.includes(method);
  }

  /** Admits or rejects one counted call to `chatId`; admitted calls are recorded. */
  admit(chatId: number, isGroup: boolean): RateDecision {
    const nowMs = this.now();
    const checks: [RateLimitScope, number[], Window][] = [
      ["chat", this.log(this.chatLog, chatId), this.config.perChat],
      ["global", this.globalLog, this.config.global],
    ];
    if (isGroup) checks.splice(1, 0, ["group", this.log(this.groupLog, chatId), this.config.perGroup]);
    const chat = this.chatStats(chatId);
    for (const [scope, log, window] of checks) {
      prune(log, nowMs - window.windowMs);
      if (log.length >= window.limit) {
        const oldest = log[0] ?? nowMs;
        const retryAfterSeconds = Math.max(1, Math.ceil((oldest + window.windowMs - nowMs) / 1000));
        this.stats.rejected += 1;
        this.stats.rejectedByScope[scope] += 1;
        chat.rejected += 1;
        return { allowed: false, scope, retryAfterSeconds };
      }
    }
    for (const [, log] of checks) log.push(nowMs);
    this.stats.accepted += 1;
    chat.accepted += 1;
    chat.firstAcceptedAtMs ??= nowMs;
    chat.lastAcceptedAtMs = nowMs;
    return { allowed: true };
  }

  snapshot(): RateLimitStats {
    return structuredClone(this.stats);
  }

  reset(): void {
    this.chatLog.clear();
    this.groupLog.clear();
    this.globalLog = [];
    this.stats = emptyStats();
  }

  private log(map: Map<number, number[]>, chatId: number): number[] {
    let log = map.get(chatId);
    if (!log) {
      log = [];
      map.set(chatId, log);
    }
    return log;
  }

  private chatStats(chatId: number): ChatRateStats {
    const key = String(chatId);
    let chat = this.stats.perChat[key];
    if (!chat) {
      chat = { accepted: 0, rejected: 0, firstAcceptedAtMs: null, lastAcceptedAtMs: null };
      this.stats.perChat[key] = chat;
    }
    return chat;
  }
}

function prune(log: number[], olderThanMs: number): void {
  while (log.length > 0 && (log[0] ?? 0) <= olderThanMs) log.shift();
}

function emptyStats(): RateLimitStats {
  return { accepted: 0, rejected: 0, rejectedByScope: { chat: 0, group: 0, global: 0 }, perChat: {} };
}
