import { createHash, randomFillSync } from "node:crypto";

let lastMs = 0;
let lastTime = "000000000";
let counter = 0;
// One getrandom call per 512 ids instead of one per id.
const pool = Buffer.alloc(5 * 512);
let poolOffset = pool.length;

function randomHex(): string {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 5;
  return pool.toString("hex", poolOffset - 5, poolOffset);
}

/**
 * A time-ordered unique id with a readable prefix (`run_…`, `msg_…`).
 * Ids created later in one process sort after earlier ones, which keeps FIFO queries simple.
 */
export function newId(prefix: string, nowMs: number = Date.now()): string {
  if (nowMs <= lastMs) {
    counter += 1;
  } else {
    lastMs = nowMs;
    lastTime = nowMs.toString(36).padStart(9, "0");
    counter = 0;
  }
  const seq = counter.toString(36).padStart(4, "0");
  return `${prefix}_${lastTime}${seq}${randomHex()}`;
}

/** A stable short id derived from `value`, for synthetic records (command replies, notices). */
export function shortHash(value: string): string {
  return createHash("sha256").update(value).digest("hex").slice(0, 20);
}
