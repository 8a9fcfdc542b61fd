/**
 * A record leaves through the adapter of its channel and account, never through another bot of
 * the channel; a record whose account has no adapter fails, naming the account.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import type { ChannelAdapter } from "../../channels/types.ts";
import { routeToAccount } from "../../outbox/adapter-route.ts";
import { createDeliveryWorker, type DeliveryWorker } from "../../outbox/worker.ts";
import { FakeClock, settle } from "../support/fake-clock.ts";
import { recordingLogger } from "../support/logger.ts";
import { FakeAdapter } from "./support/fake-adapter.ts";
import { OutboxDb } from "./support/outbox-db.ts";
import { messageInsert } from "./support/records.ts";

let db: OutboxDb;
let worker: DeliveryWorker | null = null;
beforeEach(() => {
  db = new OutboxDb();
});
afterEach(async () => {
  await worker?.drain(0);
  db.close();
});

test("each record goes through its own account's adapter; a removed account's record fails naming it", async () => {
  const clock = new FakeClock();
  const personal = new FakeAdapter({ clock, account: "111" });
  const support = new FakeAdapter({ clock, account: "222" });
  const repo = db.repository();
  const logger = recordingLogger();
  worker = createDeliveryWorker({
    repo,
    adapters: new Map([
      ["telegram", personal],
      ["telegram:support", support],
    ]),
    clock,
    random: () => 0,
    logger,
  });
  await worker.start();
  const [toPersonal, toSupport, orphan] = await repo.insert(
    [
      messageInsert("42", "for personal", { account: "111" }),
      messageInsert("42", "for support", { account: "222" }),
      messageInsert("43", "for a removed bot", { account: "333" }),
    ],
    clock.now(),
  );
  worker.notify();
  await settle();

  expect(personal.calls.map((call) => call.text)).toEqual(["for personal"]);
  expect(support.calls.map((call) => call.text)).toEqual(["for support"]);
  expect((await repo.show(toPersonal!))?.state).toBe("delivered");
  expect((await repo.show(toSupport!))?.state).toBe("delivered");
  const failed = await repo.show(orphan!);
  expect(failed?.state).toBe("failed");
  expect(failed?.lastError).toContain(
    "the telegram account 333 that received this conversation is not configured any more",
  );
  expect(failed?.lastError).toContain("configured: 111, 222");
  expect(logger.records.find((r) => r.event === "outbox.account_gone")).toMatchObject({
    recordId: orphan,
    account: "333",
  });
});

test("routeToAccount: the account's adapter; a lone adapter whose account is not known yet; never another", () => {
  const withAccount = (channel: ChannelAdapter["channel"], account: string | null) =>
    ({
      channel,
      get account() {
        if (account === null) throw new Error("known after start()");
        return account;
      },
    }) as ChannelAdapter;
  const a = withAccount("telegram", "1");
  const b = withAccount("telegram", "2");
  const starting = withAccount("discord", null);
  expect(routeToAccount([a, b, starting], "telegram", "2").adapter).toBe(b);
  expect(routeToAccount([a, b, starting], "discord", "99").adapter).toBe(starting);
  expect(routeToAccount([a], "telegram", "2")).toEqual({
    adapter: null,
    reason: expect.stringContaining(
      "the telegram account 2 that received this conversation is not configured any more (configured: 1)",
    ),
  });
  expect(routeToAccount([a], "slack", "T1")).toEqual({
    adapter: null,
    reason: "the slack channel is not configured; configure it and retry",
  });
});
