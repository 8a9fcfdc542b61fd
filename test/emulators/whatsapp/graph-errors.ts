/**
 * Graph API error answers as the Cloud API writes them: `{ error: { message, type, code,
 * error_subcode?, error_data: { messaging_product, details }, fbtrace_id } }`, where `message` is
 * "(#<code>) <title>". Meta asks clients to decide from `code` and `details`, not the HTTP status,
 * so the statuses here are the usual ones (400 for a refused request, 401 for a bad token, 5xx
 * for an outage) and tests should not lean on them more than a client does.
 */

export interface GraphErrorBody {
  error: {
    message: string;
    type: string;
    code: number;
    error_subcode?: number;
    error_data?: { messaging_product: "whatsapp"; details: string };
    fbtrace_id: string;
  };
}

export interface GraphAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** What the Cloud API sends in a failed status webhook (`statuses[].errors[]`). */
export interface StatusError {
  code: number;
  title: string;
  message: string;
  error_data: { details: string };
  href: string;
}

/** The codes this emulator produces, with Meta's titles and the details text it sends. */
export const ERRORS = {
  invalidParameter: { code: 100, title: "Invalid parameter" },
  accessToken: { code: 190, title: "Invalid OAuth access token - Cannot parse access token" },
  temporarilyUnavailable: { code: 2, title: "Service temporarily unavailable" },
  unknown: { code: 131000, title: "Something went wrong" },
  throughput: {
    code: 130429,
    title: "Rate limit hit",
    details:
      "Message failed to send because there were too many messages sent from this phone number in a short period of time",
  },
  pairRate: {
    code: 131056,
    title: "(Business Account, Consumer Account) pair rate limit hit",
    details:
      "Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time",
  },
  reengagement: {
    code: 131047,
    title: "Re-engagement message",
    details:
      "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
  },
  parameterValue: { code: 131009, title: "Parameter value is not valid" },
  mediaUpload: { code: 131053, title: "Media upload error" },
  templateParams: {
    code: 132000,
    title: "Number of parameters does not match the expected number of params",
  },
  templateMissing: { code: 132001, title: "Template name does not exist in the translation" },
} as const;

let traceCounter = 0;

/** A fresh fbtrace_id: Meta's are 27 base64-ish characters. */
export function fbtraceId(): string {
  traceCounter += 1;
  return `A${traceCounter.toString(36).padStart(6, "0")}EmuTrace${"x".repeat(11)}`.slice(0, 27);
}

export function graphError(
  status: number,
  error: { code: number; title: string; type?: string; subcode?: number },
  details?: string,
): GraphAnswer {
  const body: GraphErrorBody = {
    error: {
      message: `(#${error.code}) ${error.title}`,
      type: error.type ?? "OAuthException",
      code: error.code,
      ...(error.subcode === undefined ? {} : { error_subcode: error.subcode }),
      ...(details === undefined ? {} : { error_data: { messaging_product: "whatsapp", details } }),
      fbtrace_id: fbtraceId(),
    },
  };
  return { status, body };
}

/** A request parameter the Cloud API refuses (400, code 100). */
export function invalidParameter(details: string): GraphAnswer {
  return graphError(400, ERRORS.invalidParameter, details);
}

/** A path naming an object that does not exist or that this token cannot see (code 100, subcode 33). */
export function unsupportedRequest(method: "get" | "post", objectId: string): GraphAnswer {
  return {
    status: 400,
    body: {
      error: {
        message: `Unsupported ${method} request. Object with ID '${objectId}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        type: "GraphMethodException",
        code: 100,
        error_subcode: 33,
        fbtrace_id: fbtraceId(),
      },
    },
  };
}

/** A token that is missing or not the emulator's (401, code 190). */
export function badToken(): GraphAnswer {
  return graphError(401, ERRORS.accessToken);
}

export function statusError(error: { code: number; title: string }, details: string): StatusError {
  return {
    code: error.code,
    title: error.title,
    message: error.title,
    error_data: { details },
    href: "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
  };
}
