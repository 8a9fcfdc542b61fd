/**
 * Slack's and Discord's openFile against a local file server: the bytes stream back, statuses map
 * to retryable or not, and Slack's bot token goes only to the configured API host.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createDiscordAdapter } from "../../channels/discord/adapter.ts";
import { createSlackAdapter } from "../../channels/slack/adapter.ts";
import type { RemoteFile } from "../../channels/types.ts";
import { isSwitchboardError } from "../../src/errors.ts";
import { recordingLogger } from "../support/logger.ts";

const seen: Array<{ path: string; authorization: string | null }> = [];
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(request) {
    const url = new URL(request.url);
    seen.push({ path: url.pathname, authorization: request.headers.get("authorization") });
    if (url.pathname === "/files/ok.txt")
      return new Response("file body", { headers: { "content-length": "9" } });
    if (url.pathname === "/files/gone") return new Response("no", { status: 404 });
    return new Response("down", { status: 503 });
  },
});
afterAll(() => server.stop(true));
const base = `http://127.0.0.1:${server.port}`;

async function text(file: RemoteFile): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of file.body) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function failure(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isSwitchboardError(error)) throw new Error(`expected a SwitchboardError, got ${String(error)}`);
  return error;
}

describe("Slack openFile", () => {
  const slack = createSlackAdapter(
    { mode: "http", botToken: "xoxb-file-test", signingSecret: "s", apiUrl: `${base}/api/` },
    { logger: recordingLogger() },
  );

  test("url_private on the API host is fetched with the bot token", async () => {
    const file = await slack.openFile(`${base}/files/ok.txt`, new AbortController().signal);
    expect(file.sizeBytes).toBe(9);
    expect(await text(file)).toBe("file body");
    expect(seen.at(-1)).toEqual({ path: "/files/ok.txt", authorization: "Bearer xoxb-file-test" });
  });

  test("a URL on another host is refused without a request, so the token never leaves", async () => {
    const before = seen.length;
    const error = await failure(slack.openFile("https://evil.example/steal", new AbortController().signal));
    expect(error.code).toBe("platform_rejected");
    expect(error.message).toContain("not on files.slack.com");
    expect(seen.length).toBe(before);
    expect((await failure(slack.openFile("file:///etc/passwd", new AbortController().signal))).code).toBe(
      "platform_rejected",
    );
  });

  test("404 is a refusal; 503 an outage to retry", async () => {
    const gone = await failure(slack.openFile(`${base}/files/gone`, new AbortController().signal));
    expect([gone.code, gone.retryable]).toEqual(["platform_rejected", false]);
    const down = await failure(slack.openFile(`${base}/files/down`, new AbortController().signal));
    expect([down.code, down.retryable, down.message]).toEqual([
      "platform_unavailable",
      true,
      "Slack file download answered HTTP 503",
    ]);
  });
});

describe("Discord openFile", () => {
  const discord = createDiscordAdapter({ token: "discord-file-test" }, { logger: recordingLogger() });

  test("the attachment URL is fetched without the bot token", async () => {
    const file = await discord.openFile(`${base}/files/ok.txt`, new AbortController().signal);
    expect(await text(file)).toBe("file body");
    expect(seen.at(-1)).toEqual({ path: "/files/ok.txt", authorization: null });
  });
});
