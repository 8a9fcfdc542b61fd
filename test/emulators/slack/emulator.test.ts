import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { webApi } from "@slack/bolt";
import { postEvent, type SlackEmulator, SlackEmulatorControl, startSlackEmulator } from "./index.ts";

let emulator: SlackEmulator;
let client: webApi.WebClient;

beforeAll(() => {
  emulator = startSlackEmulator({ redeliveryDelayMs: 100, maxRedeliveries: 1 });
  client = new webApi.WebClient(emulator.botToken, {
    slackApiUrl: emulator.apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logLevel: webApi.LogLevel.ERROR,
  });
});

afterEach(() => emulator.reset());
afterAll(() => emulator.close());

async function slackError(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof webApi.WebAPIPlatformError) return error.data.error;
    throw error;
  }
  throw new Error("expected an {ok:false} answer");
}

describe("Slack emulator Web API (driven by the real web-api client)", () => {
  test("auth.test names team, bot user, bot and app", async () => {
    const auth = await client.auth.test();
    expect(auth).toMatchObject({
      ok: true,
      team_id: emulator.identity.teamId,
      user_id: emulator.identity.botUserId,
      bot_id: emulator.identity.botId,
      app_id: emulator.identity.appId,
    });
  });

  test("tokens are checked: wrong → invalid_auth, app token on a bot method → not_allowed_token_type", async () => {
    const wrong = new webApi.WebClient("xoxb-nope", {
      slackApiUrl: emulator.apiUrl,
      retryConfig: { retries: 0 },
    });
    expect(await slackError(wrong.auth.test())).toBe("invalid_auth");
    expect(await slackError(client.apps.connections.open({}))).toBe("not_allowed_token_type");
    const app = new webApi.WebClient(emulator.appToken, {
      slackApiUrl: emulator.apiUrl,
      retryConfig: { retries: 0 },
    });
    expect(await slackError(app.chat.postMessage({ channel: "C0AAAAAAA1", text: "x" }))).toBe(
      "not_allowed_token_type",
    );
    const opened = await app.apps.connections.open({});
    expect(opened.url).toStartWith(`ws://127.0.0.1:`);
    // Calls are recorded without their tokens.
    expect(JSON.stringify(emulator.calls())).not.toContain(emulator.botToken);
    expect(JSON.stringify(emulator.calls())).not.toContain(emulator.appToken);
  });

  test("text over 40,000 characters is truncated like Slack does", async () => {
    await client.chat.postMessage({ channel: "C0AAAAAAA1", text: "a".repeat(40_010) });
    const [message] = emulator.messages("C0AAAAAAA1");
    expect(message?.text.length).toBe(40_000);
    expect(message?.truncated).toBe(true);
  });

  test("chatStream() (startStream/appendStream/stopStream with chunks) assembles one message", async () => {
    const stream = client.chatStream({
      channel: "C0AAAAAAA1",
      thread_ts: "1700000000.000100",
      buffer_size: 5,
    });
    await stream.append({ markdown_text: "Hello" });
    await stream.append({ markdown_text: ", wor" });
    await stream.stop({ markdown_text: "ld!" });
    expect(emulator.calls().map((call) => call.method)).toEqual([
      "chat.startStream",
      "chat.appendStream",
      "chat.stopStream",
    ]);
    expect(emulator.messages("C0AAAAAAA1")).toMatchObject([
      { text: "Hello, world!", threadTs: "1700000000.000100", stream: "stopped" },
    ]);
    const ts = emulator.messages("C0AAAAAAA1")[0]?.ts ?? "";
    expect(
      await slackError(client.chat.appendStream({ channel: "C0AAAAAAA1", ts, markdown_text: "more" })),
    ).toBe("message_not_in_streaming_state");
  });

  test("faults apply to the next N calls of one method only", async () => {
    emulator.failNext("chat.postMessage", { kind: "server_error", status: 503 }, 2);
    for (let i = 0; i < 2; i += 1) {
      const error = await client.chat
        .postMessage({ channel: "C0AAAAAAA1", text: "x" })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(webApi.WebAPIHTTPError);
    }
    await client.auth.test();
    await client.chat.postMessage({ channel: "C0AAAAAAA1", text: "x" });
    expect(emulator.calls().map((call) => `${call.method}:${call.status}`)).toEqual([
      "chat.postMessage:503",
      "chat.postMessage:503",
      "auth.test:200",
      "chat.postMessage:200",
    ]);
  });
});

describe("Slack emulator controls", () => {
  test("/__control mirrors the TypeScript controls for other processes", async () => {
    const control = new SlackEmulatorControl(emulator.url);
    expect((await control.identity()).identity).toEqual(emulator.identity);
    await control.failNext("chat.postMessage", { kind: "rate_limited", retryAfterSeconds: 2 });
    const error = await client.chat
      .postMessage({ channel: "C0AAAAAAA1", text: "x" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(webApi.WebAPIRateLimitedError);
    await client.chat.postMessage({ channel: "C0AAAAAAA1", text: "visible" });
    expect((await control.messages("C0AAAAAAA1")).map((message) => message.text)).toEqual(["visible"]);
    expect((await control.calls("chat.postMessage")).map((call) => call.status)).toEqual([429, 200]);

    const envelopeId = await control.pushEvent(emulator.events.dm({ user: "U0CONTROL1", text: "queued" }));
    // No Socket Mode client is connected, so the envelope waits.
    expect((await control.envelopes()).find((envelope) => envelope.envelopeId === envelopeId)?.state).toBe(
      "pending",
    );
    expect(await control.sockets()).toEqual({ open: 0, ever: 0 });
    await control.reset();
    expect(await control.calls()).toEqual([]);
  });

  test("a slash command is built, recorded and queued as a slash_commands envelope over /__control", async () => {
    const response = await fetch(`${emulator.url}/__control/slash-commands`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        command: "/model",
        user: { id: "U0CONTROL1", name: "pat" },
        channel: "C0AAAAAAA1",
        text: "smart",
      }),
    });
    const { envelopeId, body } = (await response.json()) as {
      envelopeId: string;
      body: Record<string, string>;
    };
    expect(body).toMatchObject({
      command: "/model",
      text: "smart",
      user_id: "U0CONTROL1",
      channel_id: "C0AAAAAAA1",
    });
    expect(body.trigger_id).toBeString();
    expect(emulator.envelope(envelopeId)).toMatchObject({ type: "slash_commands", state: "pending" });
    const listed = await fetch(`${emulator.url}/__control/slash-commands`).then((r) => r.json());
    expect(listed).toEqual({ slashCommands: [body] });
  });

  test("unknown control paths answer 404 with a message", async () => {
    const response = await fetch(`${emulator.url}/__control/nope`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: string }).error).toContain("/__control/nope");
  });
});

describe("postEvent (Events API sender)", () => {
  test("retries a timeout with X-Slack-Retry-Num and reason http_timeout", async () => {
    const seen: { retryNum: string | null; reason: string | null }[] = [];
    const receiver = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (request) => {
        seen.push({
          retryNum: request.headers.get("x-slack-retry-num"),
          reason: request.headers.get("x-slack-retry-reason"),
        });
        if (seen.length === 1) await Bun.sleep(300);
        return new Response("ok");
      },
    });
    try {
      const result = await postEvent(
        `http://127.0.0.1:${receiver.port}/`,
        { type: "event_callback" },
        {
          signingSecret: "s",
          timeoutMs: 100,
        },
      );
      expect(result.status).toBe(200);
      expect(result.attempts.map((attempt) => attempt.retryNum)).toEqual([0, 1]);
      expect(seen).toEqual([
        { retryNum: null, reason: null },
        { retryNum: "1", reason: "http_timeout" },
      ]);
    } finally {
      await receiver.stop(true);
    }
  });
});

describe("Slack emulator assistant threads", () => {
  const dm = "D0ALICE";

  test("setStatus, setTitle and setSuggestedPrompts are recorded; a bot reply in the thread clears the status", async () => {
    const started = emulator.events.assistantThreadStarted({ user: "U0ALICE", contextChannel: "C0GENERAL" });
    expect(started.event).toMatchObject({
      type: "assistant_thread_started",
      assistant_thread: { user_id: "U0ALICE", channel_id: dm, context: { channel_id: "C0GENERAL" } },
    });
    const threadTs = String((started.event.assistant_thread as { thread_ts: string }).thread_ts);
    const prompts = [{ title: "Plan", message: "Plan my day" }];
    await client.assistant.threads.setSuggestedPrompts({ channel_id: dm, thread_ts: threadTs, prompts });
    await client.assistant.threads.setStatus({ channel_id: dm, thread_ts: threadTs, status: "is thinking…" });
    await client.assistant.threads.setTitle({ channel_id: dm, thread_ts: threadTs, title: "Plan my day" });
    expect(emulator.assistantThread(dm, threadTs)).toMatchObject({
      status: "is thinking…",
      statusCalls: ["is thinking…"],
      title: "Plan my day",
      suggestedPrompts: { prompts },
    });
    await client.chat.postMessage({ channel: dm, thread_ts: threadTs, text: "done" });
    expect(emulator.assistantThread(dm, threadTs)?.status).toBe("");
    expect(emulator.assistantThread(dm, threadTs)?.statusCalls).toEqual(["is thinking…"]);
    expect(
      await slackError(
        client.assistant.threads.setStatus({ channel_id: "C0GENERAL", thread_ts: threadTs, status: "x" }),
      ),
    ).toBe("channel_not_found");
    expect(
      await slackError(
        client.assistant.threads.setSuggestedPrompts({
          channel_id: dm,
          thread_ts: threadTs,
          prompts: [1, 2, 3, 4, 5].map((n) => ({ title: `t${n}`, message: `m${n}` })),
        }),
      ),
    ).toBe("invalid_arguments");
  });

  test("with the feature off every assistant call is refused and nothing is recorded; reset turns it back on", async () => {
    emulator.setAssistantFeature(false);
    const threadTs = "1700000000.000100";
    expect(
      await slackError(
        client.assistant.threads.setStatus({ channel_id: dm, thread_ts: threadTs, status: "x" }),
      ),
    ).toBe("missing_scope");
    emulator.setAssistantFeature(false, "not_allowed");
    expect(
      await slackError(
        client.assistant.threads.setTitle({ channel_id: dm, thread_ts: threadTs, title: "x" }),
      ),
    ).toBe("not_allowed");
    expect(emulator.assistantThreads()).toEqual([]);
    emulator.reset();
    await client.assistant.threads.setTitle({ channel_id: dm, thread_ts: threadTs, title: "back" });
    expect(emulator.assistantThread(dm, threadTs)?.title).toBe("back");
  });

  test("the HTTP controls switch the feature and list the threads", async () => {
    const control = new SlackEmulatorControl(emulator.url);
    await control.setAssistantFeature(false, "not_allowed");
    expect(
      await slackError(client.assistant.threads.setTitle({ channel_id: dm, thread_ts: "1.2", title: "x" })),
    ).toBe("not_allowed");
    await control.setAssistantFeature(true);
    await client.assistant.threads.setTitle({ channel_id: dm, thread_ts: "1.2", title: "x" });
    expect((await control.assistantThreads()).map((t) => t.title)).toEqual(["x"]);
  });
});

describe("Slack emulator org-wide (Enterprise Grid) installs", () => {
  let grid: SlackEmulator;
  const oauth = { clientId: "77.88", clientSecret: "grid-secret" };
  const api = (token?: string) =>
    new webApi.WebClient(token, {
      slackApiUrl: grid.apiUrl,
      retryConfig: { retries: 0 },
      logLevel: webApi.LogLevel.ERROR,
    });

  /** The authorize page, signed in as `headers` says, then the code exchanged for a token. */
  async function installAs(headers: Record<string, string>) {
    const redirectUri = "http://127.0.0.1:9/slack/oauth_redirect";
    const approved = await fetch(
      `${grid.url}/oauth/v2/authorize?client_id=${oauth.clientId}&scope=chat:write&redirect_uri=${encodeURIComponent(redirectUri)}`,
      { headers, redirect: "manual" },
    );
    expect(approved.status).toBe(302);
    const code = new URL(approved.headers.get("location")!).searchParams.get("code")!;
    return api().oauth.v2.access({
      client_id: oauth.clientId,
      client_secret: oauth.clientSecret,
      code,
      redirect_uri: redirectUri,
    });
  }

  beforeAll(() => {
    grid = startSlackEmulator({ oauth });
    grid.addEnterprise({
      enterpriseId: "E0GRID",
      enterpriseName: "Grid Co",
      appId: "A0APP",
      botUserId: "W0GRIDBOT",
      botId: "B0GRID",
    });
    grid.addWorkspace({ teamId: "T0GRIDONE", enterpriseId: "E0GRID", appId: "A0APP" });
    grid.addWorkspace({ teamId: "T0PLAIN", appId: "A0APP", botUserId: "U0PLAINBOT" });
  });
  afterAll(() => grid.close());

  test("oauth.v2.access answers an org-wide install as Slack does: no team, the org, is_enterprise_install", async () => {
    const granted = await installAs({ "x-emulator-enterprise": "E0GRID" });
    expect(granted).toMatchObject({
      ok: true,
      token_type: "bot",
      app_id: "A0APP",
      bot_user_id: "W0GRIDBOT",
      team: null,
      enterprise: { id: "E0GRID", name: "Grid Co" },
      is_enterprise_install: true,
    });
    expect(await api(granted.access_token).auth.test()).toMatchObject({
      team_id: "E0GRID",
      enterprise_id: "E0GRID",
      user_id: "W0GRIDBOT",
      is_enterprise_install: true,
    });
    const unknown = await fetch(`${grid.url}/oauth/v2/authorize?client_id=${oauth.clientId}&redirect_uri=x`, {
      headers: { "x-emulator-enterprise": "E0NOPE" },
      redirect: "manual",
    });
    expect(unknown.status).toBe(400);
  });

  test("a member workspace's events name the org; the org token posts in its channels, another workspace's token does not", async () => {
    const orgToken = (await installAs({ "x-emulator-enterprise": "E0GRID" })).access_token!;
    const plainToken = (await installAs({ "x-emulator-team": "T0PLAIN" })).access_token!;
    const body = grid.workspaceEvents("T0GRIDONE").dm({ user: "W0ERIN", text: "hi" });
    expect(body).toMatchObject({
      team_id: "T0GRIDONE",
      enterprise_id: "E0GRID",
      is_enterprise_install: true,
      authorizations: [{ enterprise_id: "E0GRID", team_id: "T0GRIDONE", user_id: "W0GRIDBOT" }],
    });
    expect(body.authorizations[0]!.is_enterprise_install).toBe(true);
    await api(orgToken).chat.postMessage({ channel: "D0ERIN", text: "from the org" });
    expect(await slackError(api(plainToken).chat.postMessage({ channel: "D0ERIN", text: "no" }))).toBe(
      "channel_not_found",
    );
    expect(
      grid
        .calls("chat.postMessage")
        .filter((call) => call.params.channel === "D0ERIN")
        .map((call) => [call.teamId, call.ok]),
    ).toEqual([
      ["E0GRID", true],
      ["T0PLAIN", false],
    ]);
    expect(grid.messages("D0ERIN").map((m) => m.text)).toEqual(["from the org"]);
  });
});
