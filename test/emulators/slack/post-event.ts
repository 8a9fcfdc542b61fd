import { createHmac } from "node:crypto";

/** The signature headers Slack puts on every Events API request. */
export function signSlackRequest(
  signingSecret: string,
  rawBody: string,
  timestampSeconds: number,
): { "x-slack-request-timestamp": string; "x-slack-signature": string } {
  const base = `v0:${timestampSeconds}:${rawBody}`;
  const digest = createHmac("sha256", signingSecret).update(base).digest("hex");
  return { "x-slack-request-timestamp": String(timestampSeconds), "x-slack-signature": `v0=${digest}` };
}

export interface PostEventOptions {
  signingSecret: string;
  /** Send the first attempt as Slack's retry number N (adds X-Slack-Retry-Num/-Reason). */
  retryNum?: number;
  /** Sign with a wrong secret. */
  badSignature?: boolean;
  /** Shift the signed timestamp, e.g. -360 for a request signed six minutes ago. */
  timestampSkewSeconds?: number;
  /** Retries after a non-2xx answer or a timeout; Slack makes up to 3. Default 3. */
  maxRetries?: number;
  /** Slack waits 3 s for an answer before it counts a timeout. Default 3000. */
  timeoutMs?: number;
  /** Pause before each retry (Slack: immediately, 1 min, 5 min). Default 0. */
  retryDelayMs?: number;
  /** Clock for the signed timestamp. Default Date.now. */
  nowMs?: () => number;
  /** Told of each attempt as it is answered (the result lists them only at the end). */
  onAttempt?: (attempt: PostEventAttempt) => void;
}

export type PostEventAttemptOutcome =
  | { status: number; body: string }
  | { failure: "timeout" | "connection_failed" };

export interface PostEventAttempt {
  /** 0 for the first delivery, then 1, 2, 3 like X-Slack-Retry-Num. */
  retryNum: number;
  outcome: PostEventAttemptOutcome;
}

export interface PostEventResult {
  /** Status of the last attempt, or null when it timed out or could not connect. */
  status: number | null;
  body: string;
  attempts: PostEventAttempt[];
}

/**
 * Delivers an Events API payload to `url` the way Slack does: signed, with a 3 s answer deadline,
 * retried (X-Slack-Retry-Num 1..3, X-Slack-Retry-Reason) after non-2xx answers and timeouts.
 */
export async function postEvent(
  url: string,
  payload: unknown,
  options: PostEventOptions,
): Promise<PostEventResult> {
  const rawBody = JSON.stringify(payload);
  const maxRetries = options.maxRetries ?? 3;
  const timeoutMs = options.timeoutMs ?? 3000;
  const now = options.nowMs ?? Date.now;
  const attempts: PostEventAttempt[] = [];
  let retryNum = options.retryNum ?? 0;
  let retryReason = "http_error";

  for (let attempt = 0; attempt <= maxRetries; attempt += 1) {
    if (attempt > 0 && (options.retryDelayMs ?? 0) > 0) await Bun.sleep(options.retryDelayMs ?? 0);
    const timestampSeconds = Math.floor(now() / 1000) + (options.timestampSkewSeconds ?? 0);
    const secret = options.badSignature ? `${options.signingSecret}-wrong` : options.signingSecret;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
      ...signSlackRequest(secret, rawBody, timestampSeconds),
    };
    if (retryNum > 0) {
      headers["x-slack-retry-num"] = String(retryNum);
      headers["x-slack-retry-reason"] = retryReason;
    }
    const outcome = await attemptPost(url, rawBody, headers, timeoutMs);
    attempts.push({ retryNum, outcome });
    options.onAttempt?.({ retryNum, outcome });
    if ("status" in outcome && outcome.status >= 200 && outcome.status < 300) break;
    retryReason =
      "status" in outcome
        ? "http_error"
        : outcome.failure === "timeout"
          ? "http_timeout"
          : "connection_failed";
    retryNum += 1;
  }

  const last = attempts.at(-1)?.outcome;
  return {
    status: last !== undefined && "status" in last ? last.status : null,
    body: last !== undefined && "body" in last ? last.body : "",
    attempts,
  };
}

async function attemptPost(
  url: string,
  rawBody: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<PostEventAttemptOutcome> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers,
      body: rawBody,
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: response.status, body: await response.text() };
  } catch (error) {
    const name = error instanceof Error ? error.name : "";
    return { failure: name === "TimeoutError" || name === "AbortError" ? "timeout" : "connection_failed" };
  }
}

/**
 * POSTs a button press the way Slack's interactivity does: a signed
 * `application/x-www-form-urlencoded` body whose `payload` field is the JSON. One attempt: Slack
 * never retries an interactivity request.
 */
export async function postInteraction(
  url: string,
  payload: unknown,
  options: { signingSecret: string; timeoutMs?: number },
): Promise<{ status: number; body: string; elapsedMs: number }> {
  const rawBody = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const headers = {
    "content-type": "application/x-www-form-urlencoded",
    ...signSlackRequest(options.signingSecret, rawBody, Math.floor(Date.now() / 1000)),
  };
  const started = performance.now();
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: rawBody,
    signal: AbortSignal.timeout(options.timeoutMs ?? 3000),
  });
  return { status: response.status, body: await response.text(), elapsedMs: performance.now() - started };
}

/**
 * POSTs a slash command the way Slack does over HTTP: a signed `application/x-www-form-urlencoded`
 * body of the command's fields. One attempt: Slack shows the user an error instead of retrying,
 * and counts an answer after 3 s as a failure (`elapsedMs` says how long it took).
 */
export async function postSlashCommand(
  url: string,
  body: Record<string, string | undefined>,
  options: { signingSecret: string; timeoutMs?: number },
): Promise<{ status: number; body: string; elapsedMs: number }> {
  const fields = Object.entries(body).filter((entry): entry is [string, string] => entry[1] !== undefined);
  const rawBody = new URLSearchParams(fields).toString();
  const headers = {
    "content-type": "application/x-www-form-urlencoded",
    ...signSlackRequest(options.signingSecret, rawBody, Math.floor(Date.now() / 1000)),
  };
  const started = performance.now();
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: rawBody,
    signal: AbortSignal.timeout(options.timeoutMs ?? 3000),
  });
  return { status: response.status, body: await response.text(), elapsedMs: performance.now() - started };
}
