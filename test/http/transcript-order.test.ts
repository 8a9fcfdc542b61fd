/**
 * The chat page's transcript order (assets/transcript-order.ts): the gateway's stamps decide it,
 * whatever order the stream, the POST's answer and the page's own echo arrive in. The same race in
 * Chromium, end to end, is in browser.test.ts ("an answer that arrives before its question …").
 */
import { describe, expect, test } from "bun:test";
import {
  type ConfirmedEntry,
  orderTranscript,
  type PendingEntry,
} from "../../src/gateway/http/assets/transcript-order.ts";

type Confirmed = ConfirmedEntry & { id: string };
type Pending = PendingEntry & { id: string };

const user = (id: string, atMs: number, seen: number): Confirmed => ({ id, role: "user", atMs, seen });
const answer = (id: string, atMs: number, seen: number): Confirmed => ({
  id,
  role: "assistant",
  atMs,
  seen,
});
const ids = (confirmed: Confirmed[], pending: Pending[] = []) =>
  orderTranscript(confirmed, pending).map(({ kind, entry }) => `${kind === "pending" ? "…" : ""}${entry.id}`);

describe("orderTranscript", () => {
  test("an answer that arrived before its question still shows below it", () => {
    // The run answered while the POST was still in flight: the answer reached the page first.
    expect(ids([answer("a1", 1_005, 1), user("u1", 1_000, 2)])).toEqual(["u1", "a1"]);
  });

  test("a snapshot in arrival order is shown in stored order", () => {
    const snapshot = [
      user("u1", 1_000, 1),
      answer("a2", 2_010, 2),
      answer("a1", 1_020, 3),
      user("u2", 2_000, 4),
    ];
    expect(ids(snapshot)).toEqual(["u1", "a1", "u2", "a2"]);
  });

  test("in the same millisecond the user's message goes first, then the order they were seen in", () => {
    expect(ids([answer("a1", 1_000, 1), user("u1", 1_000, 2), answer("a0", 1_000, 0)])).toEqual([
      "u1",
      "a0",
      "a1",
    ]);
  });

  test("a message not yet confirmed stays below what the page had seen when it was sent", () => {
    // u2 was sent (seen 3) after a1 (seen 2); the answer a2 arrived (seen 4) before u2 was confirmed.
    const confirmed = [user("u1", 1_000, 1), answer("a1", 1_100, 2), answer("a2", 2_100, 4)];
    expect(ids(confirmed, [{ id: "u2", seen: 3 }])).toEqual(["u1", "a1", "…u2", "a2"]);
    // Once the stream confirms it with the gateway's stamp, it keeps that place.
    expect(ids([...confirmed, user("u2", 2_000, 3)])).toEqual(["u1", "a1", "u2", "a2"]);
  });

  test("messages not yet confirmed keep the order they were sent in, after everything seen before", () => {
    const confirmed = [user("u1", 1_000, 1), answer("a1", 1_100, 2)];
    expect(
      ids(confirmed, [
        { id: "u3", seen: 5 },
        { id: "u2", seen: 3 },
      ]),
    ).toEqual(["u1", "a1", "…u2", "…u3"]);
    expect(ids([], [{ id: "u1", seen: 1 }])).toEqual(["…u1"]);
  });
});
