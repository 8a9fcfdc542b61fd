import type { HttpRoute } from "../../../channels/types.ts";
import type { WebChannel } from "../../../channels/web/index.ts";
import type { OperatorService } from "../../operator/types.ts";
import type { RuntimeEvent } from "../../runtime/events.ts";
import type { ChangeFeed } from "../change-feed.ts";
import type { Dashboard } from "../dashboard.ts";
import type { ReadinessCheck } from "../readiness.ts";
import type { OperatorTokens } from "./auth.ts";

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
  /**
   * SWITCHBOARD_METRICS_TOKEN: what a scrape from beyond this machine sends to read /metrics
   * (operator tokens work too); null or absent: only operator tokens, or none at all.
   */
  metricsToken?: string | null;
  /** The console's dashboard; without it `GET /api/dashboard` answers 503 (a standby gateway). */
  dashboard?: () => Promise<Dashboard>;
  /** Changes for the console's live lists (`GET /api/events`); operator actions are added here. */
  changes?: ChangeFeed;
  /** Called after each successful operator mutation (wakes the outbox worker). */
  onOperatorAction?: () => void;
}

/** `code` of every JSON error body the server writes: `{ error: { code, message } }`. */
