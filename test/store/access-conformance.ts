import { describe, expect, test } from "bun:test";
import {
  accessScope,
  PAIRING_CODE_TTL_MS,
  PAIRING_MAX_OPEN,
  PAIRING_MAX_WRONG_ATTEMPTS,
  PAIRING_MIN_INTERVAL_MS,
  PAIRING_WRONG_ATTEMPT_WINDOW_MS,
} from "../../src/access/pairing.ts";
import type { AccessStore } from "../../src/access/store.ts";

export interface AccessHarness {
  store: AccessStore;
  /** Closes and opens the same database again, as a restart does. */
  reopen(): Promise<AccessStore>;
  close(): Promise<void>;
}

const T0 = 1_800_000_000_000;

/** The AccessStore contract, run against each engine. */
export function runAccessConformance(engine: string, open: () => Promise<AccessHarness>): void {
  describe(`access store conformance (${engine})`, () => {
    const issue = (store: AccessStore, userId: string, updateKey: string, candidate: string, nowMs: number) =>
      store.issuePairingCode({ channel: "telegram", userId, userName: "Ann", updateKey, candidate, nowMs });

    test("a named account's codes and grants are its own (accessScope): a user paired with one bot is not with another", async () => {
      const h = await open();
      try {
        const support = accessScope("telegram", "support");
        expect(support).toBe("telegram:support");
        expect(accessScope("telegram", undefined)).toBe("telegram");
        const code = await h.store.issuePairingCode({
          channel: support,
          userId: "42",
          updateKey: "222:u1",
          candidate: "KLMNPQRS",
          nowMs: T0,
        });
        expect(code.outcome).toBe("issued");
        // The same user on the default bot gets a code of its own, not the support bot's repeated.
        expect(await issue(h.store, "42", "111:u1", "TUVWXYZ2", T0)).toMatchObject({
          outcome: "issued",
          code: "TUVWXYZ2",
        });
        expect((await h.store.approvePairingCode("KLMNPQRS", "cli", T0 + 1)).outcome).toBe("approved");
        const store = await h.reopen();
        expect(await store.isGranted(support, "42")).toBe(true);
        expect(await store.isGranted("telegram", "42")).toBe(false);
        expect(await store.isGranted("telegram:sales", "42")).toBe(false);
        expect((await store.listGrants()).map((g) => [g.channel, g.userId])).toEqual([[support, "42"]]);
        expect((await store.listOpenCodes(T0)).map((c) => [c.channel, c.code])).toEqual([
          ["telegram", "TUVWXYZ2"],
        ]);
        expect(await store.revokeGrant(support, "42")).toBe(true);
        expect(await store.isGranted(support, "42")).toBe(false);
      } finally {
        await h.close();
      }
    });

    test("a code is issued once per update, approved once, and the grant survives a reopen", async () => {
      const h = await open();
      try {
        const first = await issue(h.store, "42", "u1", "ABCDEFGH", T0);
        expect(first).toEqual({ outcome: "issued", code: "ABCDEFGH", expiresAtMs: T0 + PAIRING_CODE_TTL_MS });
        // The same update redelivered much later: the same code, no second one.
        const replay = await issue(h.store, "42", "u1", "ZZZZZZZZ", T0 + 10 * PAIRING_MIN_INTERVAL_MS);
        expect(replay).toEqual({
          outcome: "repeated",
          code: "ABCDEFGH",
          expiresAtMs: T0 + PAIRING_CODE_TTL_MS,
        });
        expect((await h.store.listOpenCodes(T0)).map((c) => c.code)).toEqual(["ABCDEFGH"]);
        expect(await h.store.isGranted("telegram", "42")).toBe(false);

        const approved = await h.store.approvePairingCode("ABCDEFGH", "cli", T0 + 1000);
        expect(approved).toEqual({
          outcome: "approved",
          grant: {
            channel: "telegram",
            userId: "42",
            code: "ABCDEFGH",
            userName: "Ann",
            grantedAtMs: T0 + 1000,
            grantedBy: "cli",
          },
        });
        const again = await h.store.approvePairingCode("ABCDEFGH", "api", T0 + 2000);
        expect(again.outcome).toBe("already_redeemed");
        expect(await h.store.listOpenCodes(T0 + 2000)).toEqual([]);

        // Another user's candidate that is already a code: nothing written, the caller draws again.
        expect(await issue(h.store, "43", "u2", "ABCDEFGH", T0 + 2000)).toEqual({ outcome: "collision" });
        expect((await issue(h.store, "43", "u2", "BCDEFGHJ", T0 + 2000)).outcome).toBe("issued");

        const store = await h.reopen();
        expect(await store.isGranted("telegram", "42")).toBe(true);
        expect(await store.isGranted("discord", "42")).toBe(false);
        expect(
          (await store.listGrants()).map((g) => [g.channel, g.userId, g.grantedBy, g.grantedAtMs]),
        ).toEqual([["telegram", "42", "cli", T0 + 1000]]);
        expect(await store.revokeGrant("telegram", "42")).toBe(true);
        expect(await store.revokeGrant("telegram", "42")).toBe(false);
        expect(await store.isGranted("telegram", "42")).toBe(false);
        // Revoked: the redeemed code does not admit again.
        expect((await store.approvePairingCode("ABCDEFGH", "cli", T0 + 3000)).outcome).toBe(
          "already_redeemed",
        );
        expect(await store.isGranted("telegram", "42")).toBe(false);
      } finally {
        await h.close();
      }
    });

    test("new codes are rate limited and capped at the open maximum; an expired code is refused", async () => {
      const h = await open();
      try {
        const s = h.store;
        expect((await issue(s, "7", "a", "AAAAAAAA", T0)).outcome).toBe("issued");
        // Within the interval: the newest open code again.
        expect(await issue(s, "7", "b", "BBBBBBBB", T0 + 1000)).toMatchObject({
          outcome: "repeated",
          code: "AAAAAAAA",
        });
        let at = T0;
        const issued = ["AAAAAAAA"];
        for (const c of ["CCCCCCCC", "DDDDDDDD"]) {
          at += PAIRING_MIN_INTERVAL_MS;
          expect(await issue(s, "7", c, c, at)).toMatchObject({ outcome: "issued", code: c });
          issued.push(c);
        }
        expect(issued.length).toBe(PAIRING_MAX_OPEN);
        at += PAIRING_MIN_INTERVAL_MS;
        expect(await issue(s, "7", "e", "EEEEEEEE", at)).toMatchObject({
          outcome: "repeated",
          code: "DDDDDDDD",
        });
        // Another user is not limited by this one.
        expect((await issue(s, "8", "f", "FFFFFFFF", at)).outcome).toBe("issued");
        // Once the first codes expire, a new one can be issued.
        const later = T0 + PAIRING_CODE_TTL_MS + 1;
        expect((await s.approvePairingCode("AAAAAAAA", "cli", later)).outcome).toBe("expired");
        expect(await s.isGranted("telegram", "7")).toBe(false);
        expect(await issue(s, "7", "g", "GGGGGGGG", later + PAIRING_MIN_INTERVAL_MS * 3)).toMatchObject({
          outcome: "issued",
        });
      } finally {
        await h.close();
      }
    });

    test("wrong attempts lock only their attempt key: another operator can still approve", async () => {
      const h = await open();
      try {
        const s = h.store;
        await issue(s, "11", "x", "HJKMNPQR", T0);
        for (let i = 1; i <= PAIRING_MAX_WRONG_ATTEMPTS; i++) {
          expect(
            await s.approvePairingCode("WRONG234", "operator:mallory", T0 + i, "operator:mallory"),
          ).toEqual({
            outcome: "unknown",
            wrongAttempts: i,
          });
        }
        expect(
          (await s.approvePairingCode("HJKMNPQR", "operator:mallory", T0 + 100, "operator:mallory")).outcome,
        ).toBe("locked");
        // Alice's own count starts at one; her right code is approved while Mallory stays locked.
        expect(await s.approvePairingCode("WRONG234", "operator:alice", T0 + 101, "operator:alice")).toEqual({
          outcome: "unknown",
          wrongAttempts: 1,
        });
        const approved = await s.approvePairingCode("HJKMNPQR", "operator:alice", T0 + 102, "operator:alice");
        expect(approved).toMatchObject({
          outcome: "approved",
          grant: { userId: "11", grantedBy: "operator:alice" },
        });
        // The key, not the recorded approver, is what is locked: the same actor from another key passes.
        await issue(s, "12", "y", "STUVWXYZ", T0 + 200);
        expect(
          (await s.approvePairingCode("STUVWXYZ", "operator:api", T0 + 201, "address:192.0.2.7")).outcome,
        ).toBe("approved");
        expect(
          (await s.approvePairingCode("STUVWXYZ", "operator:api", T0 + 202, "operator:mallory")).outcome,
        ).toBe("locked");
      } finally {
        await h.close();
      }
    });

    test("wrong attempts are counted and lock approval for the window", async () => {
      const h = await open();
      try {
        const s = h.store;
        await issue(s, "9", "x", "HJKMNPQR", T0);
        for (let i = 1; i <= PAIRING_MAX_WRONG_ATTEMPTS; i++) {
          expect(await s.approvePairingCode("WRONG234", "cli", T0 + i)).toEqual({
            outcome: "unknown",
            wrongAttempts: i,
          });
        }
        expect(await s.approvePairingCode("HJKMNPQR", "cli", T0 + 100)).toEqual({
          outcome: "locked",
          retryAtMs: T0 + 1 + PAIRING_WRONG_ATTEMPT_WINDOW_MS,
        });
        expect(await s.isGranted("telegram", "9")).toBe(false);
        // Once the first wrong attempt leaves the window, approval works again (on a fresh code: the
        // first one expired meanwhile).
        const after = T0 + 1 + PAIRING_WRONG_ATTEMPT_WINDOW_MS + 1;
        await issue(s, "9", "y", "STUVWXYZ", after);
        expect((await s.approvePairingCode("STUVWXYZ", "cli", after + 1)).outcome).toBe("approved");
        expect(await s.isGranted("telegram", "9")).toBe(true);
      } finally {
        await h.close();
      }
    });
  });
}
