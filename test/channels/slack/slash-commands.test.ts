/**
 * Slash commands on Slack through Bolt's `app.command`, over Socket Mode and over HTTP, against
 * the Slack emulator: each becomes the typed command's text at ingress, in the conversation of
 * the channel (or thread) it was run in, acknowledged within Slack's 3 s once ingress resolved; a
 * redelivered envelope carries the same key; the answer goes to where the command was run.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createSlackAdapter, type SlackAdapter } from "../../../channels/slack/adapter.ts";
import type { IngressOutcome } from "../../../channels/types.ts";
import { commandMenu } from "../../../src/gateway/command-list.ts";
import { postSlashCommand, type SlackEmulator, startSlackEmulator } from "../../emulators/slack/index.ts";
import { recordingIngress, recordingLogger, serveRoutes } from "./helpers.ts";

const signingSecret = "test-signing-secret-0123456789";
const alice = { id: "U0ALICE001", name: "alice" };
const menu = commandMenu(() => ["fast", "smart"]);

let emulator: SlackEmulator | undefined;
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await emulator?.close();
  emulator = undefined;
});

async function start(mode: "socket" | "http", outcome: IngressOutcome = { kind: "command", reply: "" }) {
  emulator = startSlackEmulator({ redeliveryDelayMs: 3000 });
  const adapter: SlackAdapter = createSlackAdapter(
    mode === "socket"
      ? { mode, botToken: emulator.botToken, appToken: emulator.appToken, apiUrl: emulator.apiUrl }
      : { mode, botToken: emulator.botToken, signingSecret, apiUrl: emulator.apiUrl, requestTimeoutMs: 2000 },
    { logger: recordingLogger(), commands: menu },
  );
  const ingress = recordingIngress(async () => outcome);
  await adapter.start(ingress);
  cleanups.push(() => adapter.stop());
  const routes = serveRoutes(adapter.routes());
  cleanups.push(() => routes.stop());
  return { adapter, ingress, url: `${routes.url}/slack/events`, slack: emulator };
}

describe("Slack slash commands", () => {
  test("over Socket Mode: an input with the typed text, acked within 3 s; a redelivery has the same key", async () => {
    const { adapter, ingress, slack } = await start("socket");
    const body = slack.slashCommand("/model", { user: alice, channel: "C0GENERAL1", text: "smart" });
    const envelopeId = slack.pushSlashCommand(body);
    await slack.waitFor(() => slack.envelope(envelopeId)?.state === "acked", 3000, "the ack");
    const envelope = slack.envelope(envelopeId)!;
    expect(envelope.ackedAtMs! - envelope.deliveries[0]!.atMs).toBeLessThan(3000);
    expect(ingress.messages).toHaveLength(1);
    const inbound = ingress.messages[0]!;
    expect(inbound).toMatchObject({
      channel: "slack",
      updateKey: `command:${body.trigger_id}`,
      text: "/model smart",
      principal: { id: alice.id, name: "alice", isBot: false },
      conversationKey: `sl:${adapter.account}:ch:C0GENERAL1`,
      replyTarget: "C0GENERAL1",
      surface: "group",
      addressedToBot: true,
    });

    slack.duplicate(envelopeId);
    await slack.waitFor(() => ingress.messages.length === 2, 3000, "the redelivery at ingress");
    expect(ingress.messages[1]!.updateKey).toBe(inbound.updateKey);

    await adapter.send(inbound.replyTarget, {
      text: "Model set to smart.",
      format: "plain",
      idempotencyKey: "n#0",
    });
    expect(slack.messages("C0GENERAL1").map((m) => m.text)).toEqual(["Model set to smart."]);
  });

  test("over HTTP: the signed form is answered 200 within 3 s; a command in a thread is answered there", async () => {
    const { adapter, ingress, url, slack } = await start("http");
    const body = slack.slashCommand("/agent-status", {
      user: alice,
      channel: "C0GENERAL1",
      threadTs: "1700000000.000100",
    });
    const answer = await postSlashCommand(url, { ...body }, { signingSecret });
    expect(answer.status).toBe(200);
    expect(answer.elapsedMs).toBeLessThan(3000);
    const inbound = ingress.messages[0]!;
    expect(inbound).toMatchObject({
      updateKey: `command:${body.trigger_id}`,
      text: "/status",
      conversationKey: `sl:${adapter.account}:ch:C0GENERAL1:thread:1700000000.000100`,
      replyTarget: "C0GENERAL1:1700000000.000100",
      surface: "thread",
    });
    await adapter.send(inbound.replyTarget, {
      text: "Model: default",
      format: "plain",
      idempotencyKey: "n#0",
    });
    expect(slack.messages("C0GENERAL1")[0]).toMatchObject({
      text: "Model: default",
      threadTs: "1700000000.000100",
    });

    const forged = await postSlashCommand(url, { ...body }, { signingSecret: "wrong-secret-0123456789" });
    expect(forged.status).toBe(401);
    expect(ingress.messages).toHaveLength(1);
  });

  test("in a DM the command joins the DM's conversation", async () => {
    const { adapter, ingress, url, slack } = await start("http");
    const body = slack.slashCommand("/in", { user: alice, channel: "D0ALICE001", text: "10m stretch" });
    expect((await postSlashCommand(url, { ...body }, { signingSecret })).status).toBe(200);
    expect(ingress.messages[0]).toMatchObject({
      text: "/in 10m stretch",
      conversationKey: `sl:${adapter.account}:dm:${alice.id}`,
      replyTarget: "D0ALICE001",
      surface: "dm",
    });
  });

  test("a command ingress does not take gets a notice only its user sees", async () => {
    const { url, slack } = await start("http", { kind: "ignored", reason: "user not allowed" });
    const body = slack.slashCommand("/new", { user: alice, channel: "C0GENERAL1" });
    expect((await postSlashCommand(url, { ...body }, { signingSecret })).status).toBe(200);
    expect(slack.ephemeralMessages(alice.id).map((m) => m.text)).toEqual([
      "You are not on this bot's allow list, so it does not take commands from you.",
    ]);
  });

  test("a command that is not switchboard's is acknowledged and skipped", async () => {
    const { ingress, url, slack } = await start("http");
    const body = slack.slashCommand("/weather", { user: alice, channel: "C0GENERAL1" });
    expect((await postSlashCommand(url, { ...body }, { signingSecret })).status).toBe(200);
    expect(ingress.messages).toHaveLength(0);
  });
});
