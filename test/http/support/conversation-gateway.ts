/**
 * A gateway composed in this process with its HTTP server serving the conversation API, as
 * main.ts composes them (operator service, conversation services, app tokens).
 */
import { conversationApiServices } from "../../../src/gateway/conversation-api-services.ts";
import { type HttpServer, startHttpServer } from "../../../src/gateway/http/server.ts";
import { createOperatorService } from "../../../src/operator/service.ts";
import { systemClock } from "../../../src/util/clock.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../../support/gateway.ts";
import { capturingLogger, testServices } from "./services.ts";

export interface ConversationGateway {
  readonly inProcess: InProcessGateway;
  readonly server: HttpServer;
  /** The HTTP server's log lines, as written. */
  readonly httpLog: string[];
  stop(): Promise<void>;
}

export async function startConversationGateway(env: Record<string, string>): Promise<ConversationGateway> {
  const inProcess = await startInProcessGateway(env, { clock: systemClock, limits: FAST_PACING });
  const { gateway } = inProcess;
  const operator = createOperatorService({
    stores: gateway.stores,
    clock: systemClock,
    onOutboxChanged: () => gateway.worker.notify(),
    onApprovalDecided: () => void gateway.runtime.recover().catch(() => {}),
  });
  const { logger, lines } = capturingLogger();
  const { services } = testServices({
    operator,
    operatorToken: gateway.config.operatorToken,
    follow: (conversationId, afterSeq, signal) => gateway.runtime.follow(conversationId, afterSeq, signal),
  });
  const server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    logger,
    services: {
      ...services,
      operatorTokens: gateway.config.operatorTokens,
      appTokens: gateway.config.appTokens,
      openaiCompat: gateway.config.openaiCompat,
      conversations: conversationApiServices(gateway, systemClock),
      onOperatorAction: () => gateway.worker.notify(),
    },
  });
  return {
    inProcess,
    server,
    httpLog: lines,
    async stop() {
      await server.stop();
      await inProcess.stop();
    },
  };
}
