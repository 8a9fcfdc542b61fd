import type { HttpRoute } from "../../../channels/types.ts";
import type { WebChannel } from "../../../channels/web/index.ts";
import type { OperatorService } from "../../operator/types.ts";
import type { RuntimeEvent } from "../../runtime/events.ts";
import type { ChangeFeed } from "../change-feed.ts";
import type { ExplainedConversation } from "../config/explain.ts";
import type { Dashboard } from "../dashboard.ts";
import type { ReadinessCheck } from "../readiness.ts";
import type { AppTokens } from "./api-caller.ts";
import type { OperatorTokens } from "./auth.ts";
import type { ConversationApiServices } from "./conversation-api.ts";

export interface Readiness {
  ready: boolean;
  checks: Record<string, ReadinessCheck>;
}

/** Everything the HTTP server serves; the gateway composes it, tests pass fakes. */
export interface HttpServices {
  operator: OperatorService;
  /** Durable events after `afterSeq` from the ledger, then live ones, until `signal` aborts. */
  follow(conversationId: string, afterSeq: number, signal: AbortSignal): AsyncIterable<RuntimeEvent>;
  readiness(): Promise<Readiness>;
  /** Prometheus text exposition. */
  metrics(): Promise<string>;
  /** Webhook routes of the channel adapters, mounted as given and without the operator token. */
  routes: HttpRoute[];
  web: WebChannel;
  /** The shared operator token; with no `operatorTokens` either, the API and console answer 403. */
  operatorToken: string | null;
  /** Named operators' own tokens; a request with one acts as that operator. */
  operatorTokens?: OperatorTokens;
  /** Applications' tokens (SWITCHBOARD_APP_TOKENS): the conversation API only, on their own conversations. */
  appTokens?: AppTokens;
  /** SWITCHBOARD_OPENAI_COMPAT=on: serve `POST /v1/chat/completions` over the conversation API. */
  openaiCompat?: boolean;
  /** The conversation API (`/api/conversations`, runs' events, `/api/send`); absent on a standby. */
  conversations?: ConversationApiServices;
  /**
   * SWITCHBOARD_METRICS_TOKEN: what a scrape from beyond this machine sends to read /metrics
   * (operator tokens work too); null or absent: only operator tokens, or none at all.
   */
  metricsToken?: string | null;
  /** The console's dashboard; without it `GET /api/dashboard` answers 503 (a standby gateway). */
  dashboard?: () => Promise<Dashboard>;
  /** A conversation's settings and what set each; without it `GET /api/conversations/:id/settings` answers 503. */
  conversationSettings?: (conversationId: string) => Promise<ExplainedConversation | null>;
  /** Changes for the console's live lists (`GET /api/events`); operator actions are added here. */
  changes?: ChangeFeed;
  /** Called after each successful operator mutation (wakes the outbox worker). */
  onOperatorAction?: () => void;
}

/** `code` of every JSON error body the server writes: `{ error: { code, message } }`. */
