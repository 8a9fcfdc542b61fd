import { randomBytes } from "node:crypto";

let lastMs = 0;
let counter = 0;

/**
 * A time-ordered unique id with a readable prefix (`run_…`, `msg_…`).
 * Ids created later in one process sort after earlier ones, which keeps FIFO queries simple.
 */
export function newId(prefix: string, nowMs: number = Date.now()): string {
  if (nowMs <= lastMs) {
    counter += 1;
  } else {
    lastMs = nowMs;
    counter = 0;
  }
  const time = lastMs.toString(36).padStart(9, "0");
  const seq = counter.toString(36).padStart(4, "0");
  return `${prefix}_${time}${seq}${randomBytes(5).toString("hex")}`;
}
