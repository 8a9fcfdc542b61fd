/**
 * App tokens and bindings' `apps`, against a real gateway process and the Telegram emulator: an
 * app a binding lists sends to that binding's chat (delivered once; a repeated idempotency key is
 * the same record) and reads the chat's runs; another chat, and an app the binding does not list,
 * are refused with nothing in the outbox. An `apps` name no app token has stops the start.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { OutboxRecord } from "../../outbox/types.ts";
import { privateChat, startTelegramEmulator, user } from "../emulators/telegram/index.ts";
import { runCli } from "./support/cli.ts";
import { telegramGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";

const OPERATOR = "api-send-apps-operator-01";
const CRM = "api-send-apps-crm-token-01";
const OTHER = "api-send-apps-other-token1";
const fixture = useE2eFixture("switchboard-e2e-api-send-apps-", startTelegramEmulator);
const { dir, platform: telegram } = fixture;
const alice = user(5201, "Alice");
const bob = user(5202, "Bob");

const configFile = join(dir.path, "bindings.json");
writeFileSync(
  configFile,
  JSON.stringify({
    version: 1,
    surfaces: { "telegram:dm": { delivery: "terminal" } },
    // A Telegram DM's chat id is the user's id.
    bindings: [{ match: { channel: "telegram", chat: String(alice.id) }, apps: ["crm"] }],
  }),
);

describe("an app a binding lists", () => {
  const gateway = fixture.gatewayAroundTests(() =>
    telegramGatewayEnv(fixture, {
      allowed: [alice.id, bob.id],
      extra: {
        SWITCHBOARD_CONFIG: configFile,
        SWITCHBOARD_OPERATOR_TOKEN: OPERATOR,
        SWITCHBOARD_APP_TOKENS: `crm=${CRM},other=${OTHER}`,
      },
    }),
  );
  const call = (method: "GET" | "POST", path: string, token: string, body?: unknown) =>
    fetch(`${gateway.process.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const errorOf = async (response: Response) =>
    ((await response.json()) as { error: { message: string } }).error.message;

  test("sends to the binding's chat once per key; another chat and another app are refused", async () => {
    for (const person of [alice, bob]) {
      telegram.incoming({ chat: privateChat(person), from: person, text: "hello" });
      await telegram.waitForMessage(person.id, (m) => m.fromBot, 15_000);
    }
    const body = {
      channel: "telegram",
      target: String(alice.id),
      text: "Your invoice is ready",
      idempotencyKey: "invoice-7",
    };
    const first = await call("POST", "/api/send", CRM, body);
    expect(first.status).toBe(202);
    const sent = (await first.json()) as { outcome: string; outboxId: string };
    expect(sent.outcome).toBe("enqueued");
    await telegram.waitForMessage(alice.id, (m) => m.visibleText === body.text, 15_000);
    const again = await call("POST", "/api/send", CRM, body);
    expect(again.status).toBe(202);
    expect(await again.json()).toMatchObject({ outcome: "duplicate", outboxId: sent.outboxId });
    const record = await eventually(
      async () => {
        const shown = (await (
          await call("GET", `/api/outbox/${sent.outboxId}`, OPERATOR)
        ).json()) as OutboxRecord;
        return shown.state === "delivered" ? shown : undefined;
      },
      15_000,
      "the send to be delivered",
    );
    expect(record.target).toBe(String(alice.id));

    const toBob = await call("POST", "/api/send", CRM, {
      ...body,
      target: String(bob.id),
      text: "Not for Bob",
      idempotencyKey: "bob-1",
    });
    expect(toBob.status).toBe(403);
    expect(await errorOf(toBob)).toContain(`chat ${bob.id}: no binding matches it`);
    const byOther = await call("POST", "/api/send", OTHER, {
      ...body,
      text: "Not from other",
      idempotencyKey: "other-1",
    });
    expect(byOther.status).toBe(403);
    expect(await errorOf(byOther)).toContain('Add "other" to bindings.0.apps');
    // The operator may still send anywhere.
    const byOperator = await call("POST", "/api/send", OPERATOR, {
      ...body,
      target: String(bob.id),
      text: "From the operator",
      idempotencyKey: "op-1",
    });
    expect(byOperator.status).toBe(202);
    await telegram.waitForMessage(bob.id, (m) => m.visibleText === "From the operator", 15_000);

    const outbox = (await (await call("GET", "/api/outbox?limit=1000", OPERATOR)).json()) as {
      items: OutboxRecord[];
    };
    const texts = outbox.items.map((item) => item.markdown);
    expect(texts.filter((text) => text === body.text)).toHaveLength(1);
    expect(texts).not.toContain("Not for Bob");
    expect(texts).not.toContain("Not from other");
    expect(telegram.messages(alice.id).filter((m) => m.visibleText === body.text)).toHaveLength(1);
    expect(telegram.messages(bob.id).some((m) => m.visibleText === "Not for Bob")).toBe(false);
    expect(telegram.messages(alice.id).some((m) => m.visibleText === "Not from other")).toBe(false);
  }, 45_000);

  test("reads the runs of the binding's chat; not those of another chat, nor does another app", async () => {
    const runOf = async (person: typeof alice, text: string) => {
      telegram.incoming({ chat: privateChat(person), from: person, text });
      await telegram.waitForMessage(person.id, (m) => m.visibleText?.includes(text) === true, 15_000);
      // Runs are listed newest first: the one that just answered is the first.
      const runs = (await (await call("GET", "/api/runs?limit=1", OPERATOR)).json()) as {
        items: Array<{ id: string; conversationId: string }>;
      };
      return runs.items[0]!;
    };
    const alicesRun = await runOf(alice, "what is due?");
    const bobsRun = await runOf(bob, "and mine?");
    const events = await call("GET", `/api/runs/${alicesRun.id}/events`, CRM);
    expect(events.status).toBe(200);
    const stream = await events.text();
    expect(stream).toContain("event: answer");
    expect(stream).toContain(alicesRun.id);
    expect((await call("GET", `/api/runs/${alicesRun.id}/events`, OTHER)).status).toBe(404);
    expect((await call("GET", `/api/runs/${bobsRun.id}/events`, CRM)).status).toBe(404);
  }, 45_000);
});

test("an apps name no app token has stops the start with exit 78, naming the binding and key", async () => {
  const badConfig = join(dir.path, "unknown-app.json");
  writeFileSync(
    badConfig,
    JSON.stringify({
      version: 1,
      bindings: [
        { match: { channel: "telegram", chat: "42" }, apps: ["crm"] },
        { match: { channel: "telegram", chat: "43" }, apps: ["billing"] },
      ],
    }),
  );
  const result = await runCli(["start"], {
    SWITCHBOARD_CONFIG: badConfig,
    SWITCHBOARD_DB: join(dir.path, "never-opened.sqlite"),
    SWITCHBOARD_HTTP_PORT: "0",
    SWITCHBOARD_APP_TOKENS: `crm=${CRM}`,
  });
  expect(result.exitCode).toBe(78);
  expect(result.stderr).toMatch(/^switchboard: configuration error: SWITCHBOARD_CONFIG/m);
  expect(result.stderr).toContain(
    'bindings.1.apps: "billing" is not an app of SWITCHBOARD_APP_TOKENS; apps: crm',
  );
  expect(result.stderr).not.toContain(CRM);
}, 20_000);
