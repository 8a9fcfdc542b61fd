/**
 * Bounds on uploads not yet sent with a message. Each stays in the blob store until the cleanup's
 * grace ends (an hour) whether or not a message ever carries it, so without bounds one address
 * could fill the disk (120 uploads of 20 MB a minute). Counted per session, per client address
 * and in all, by files and bytes; an upload in progress counts with the size it declared (or the
 * largest a file may be) until it is stored. Pure bookkeeping: times come from the caller.
 */

/** A bound on uploads not yet sent: at most this many files and bytes. */
export interface PendingLimit {
  files: number;
  bytes: number;
}

export interface PendingUploadLimits {
  perSession: PendingLimit;
  /** Per client address (an IPv6 one by its /64), so many sessions from one place share it. */
  perClient: PendingLimit;
  total: PendingLimit;
  /** How long an unsent upload counts: as long as the blob cleanup keeps it (its grace, 1 h). */
  pendingMs: number;
}

const MB = 1024 * 1024;

/**
 * 20 files or 100 MB a session, 50 files or 250 MB an address, 1000 files or 2 GB in all (each
 * at least one file of the largest size), counted for an hour.
 */
export function defaultPendingLimits(maxFileBytes: number): PendingUploadLimits {
  return {
    perSession: { files: 20, bytes: Math.max(100 * MB, maxFileBytes) },
    perClient: { files: 50, bytes: Math.max(250 * MB, maxFileBytes) },
    total: { files: 1000, bytes: Math.max(2048 * MB, maxFileBytes) },
    pendingMs: 60 * 60 * 1000,
  };
}

/** Why an upload was refused: whose bound, what it is, what is held, and when room frees up. */
export interface PendingRefusal {
  scope: "session" | "client" | "total";
  limit: PendingLimit;
  held: { files: number; bytes: number };
  /** When the oldest upload held in this scope stops counting. */
  retryAfterMs: number;
}

interface Entry {
  session: string;
  client: string;
  /** The blob id once stored; null while the upload is in progress. */
  id: string | null;
  bytes: number;
  atMs: number;
}

export class PendingUploads {
  private readonly entries = new Map<number, Entry>();
  private next = 0;

  constructor(private readonly limits: PendingUploadLimits) {}

  /**
   * Room for one more upload of up to `bytes` from `session` at `client`: a reservation to
   * `settle` or `release`, or the first bound it would pass.
   */
  reserve(
    session: string,
    client: string,
    bytes: number,
    nowMs: number,
  ): { reservation: number } | { refused: PendingRefusal } {
    this.expire(nowMs);
    const scopes: Array<[PendingRefusal["scope"], PendingLimit, (e: Entry) => boolean]> = [
      ["session", this.limits.perSession, (e) => e.session === session],
      ["client", this.limits.perClient, (e) => e.client === client],
      ["total", this.limits.total, () => true],
    ];
    for (const [scope, limit, holds] of scopes) {
      const held = [...this.entries.values()].filter(holds);
      const heldBytes = held.reduce((sum, e) => sum + e.bytes, 0);
      if (held.length + 1 > limit.files || heldBytes + bytes > limit.bytes) {
        const oldestMs = Math.min(...held.map((e) => e.atMs), nowMs);
        return {
          refused: {
            scope,
            limit,
            held: { files: held.length, bytes: heldBytes },
            retryAfterMs: Math.max(1000, oldestMs + this.limits.pendingMs - nowMs),
          },
        };
      }
    }
    const reservation = this.next++;
    this.entries.set(reservation, { session, client, id: null, bytes, atMs: nowMs });
    return { reservation };
  }

  /** The upload is stored as `id` with its real size. The same bytes held twice by a session count once. */
  settle(reservation: number, id: string, bytes: number): void {
    const entry = this.entries.get(reservation);
    if (!entry) return;
    for (const [key, other] of this.entries)
      if (key !== reservation && other.session === entry.session && other.id === id) this.entries.delete(key);
    entry.id = id;
    entry.bytes = bytes;
  }

  /** The upload failed: nothing was kept, so it holds nothing. */
  release(reservation: number): void {
    this.entries.delete(reservation);
  }

  /** A message of `session` carries these uploads: they are no longer pending. */
  attached(session: string, ids: readonly string[]): void {
    for (const [key, entry] of this.entries)
      if (entry.session === session && entry.id !== null && ids.includes(entry.id)) this.entries.delete(key);
  }

  private expire(nowMs: number): void {
    for (const [key, entry] of this.entries)
      if (entry.atMs <= nowMs - this.limits.pendingMs) this.entries.delete(key);
  }
}

/** `3 KB`, `0.5 MB`, `100 MB`. */
const megabytes = (bytes: number) =>
  bytes < MB / 10 ? `${Math.ceil(bytes / 1024)} KB` : `${Math.round((bytes / MB) * 10) / 10} MB`;

/** The 429's message: which bound, its size, what is held, and what to do. */
export function pendingRefusalText(refusal: PendingRefusal): string {
  const { limit, held } = refusal;
  const minutes = Math.max(1, Math.ceil(refusal.retryAfterMs / 60_000));
  const holding = `${held.files} file${held.files === 1 ? "" : "s"} (${megabytes(held.bytes)})`;
  const bound = `${limit.files} files or ${megabytes(limit.bytes)}`;
  switch (refusal.scope) {
    case "session":
      return `This chat holds ${holding} uploaded but not sent; the limit is ${bound} per session. Send them with a message, or try again in ${minutes} min.`;
    case "client":
      return `This address holds ${holding} uploaded but not sent; the limit is ${bound} per address. Send them with a message, or try again in ${minutes} min.`;
    case "total":
      return `The gateway holds ${holding} uploaded but not sent; the limit is ${bound} in all. Try again in ${minutes} min.`;
  }
}
