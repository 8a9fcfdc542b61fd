import { afterEach, expect, test } from "bun:test";
import type { ConsoleChange } from "../../src/gateway/change-feed.ts";
import { announcingOutcomes } from "../../src/gateway/outbox-changes.ts";
import { OutboxDb } from "../outbox/support/outbox-db.ts";
import { messageInsert } from "../outbox/support/records.ts";

let db: OutboxDb | undefined;
afterEach(() => db?.close());

test("a record that fails or turns ambiguous is announced once; other calls pass through unannounced", async () => {
  db = new OutboxDb();
  const repo = db.repository();
  const changes: ConsoleChange[] = [];
  const announced = announcingOutcomes(repo, (change) => changes.push(change));
  const [failing, unsure] = await announced.insert(
    [messageInsert("chat-1", "one"), messageInsert("chat-2", "two")],
    1_000,
  );
  await announced.markSending(failing!, 1_001);
  await announced.markSending(unsure!, 1_001);
  expect(changes).toEqual([]);

  expect(await announced.markFailed(failing!, "400 chat not found", 1_002)).toBe(true);
  expect(await announced.markAmbiguous(unsure!, "connection reset", 1_002)).toBe(true);
  // A transition that does not happen (already failed) is not announced.
  expect(await announced.markFailed(failing!, "again", 1_003)).toBe(false);
  expect(changes).toEqual([
    { kind: "outbox", outboxId: failing!, state: "failed" },
    { kind: "outbox", outboxId: unsure!, state: "ambiguous" },
  ]);
  expect((await repo.show(failing!))?.state).toBe("failed");
  expect((await repo.show(unsure!))?.state).toBe("ambiguous");
});
