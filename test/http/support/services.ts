/** Builds HttpServices for tests around a given operator service, recording what the server did. */
import { createWebChannel, type WebChannel } from "../../../channels/web/index.ts";
import type { HttpServices, Readiness } from "../../../src/gateway/http/types.ts";
import type { OperatorService } from "../../../src/operator/types.ts";
import type { RuntimeEvent } from "../../../src/runtime/events.ts";
import { createLogger, type Logger } from "../../../src/util/log.ts";

export interface RecordedCall {
  method: string;
  args: unknown[];
}

/** Wraps every method of the operator service so a test can see which ones the server called. */
export function recordingOperator(inner: OperatorService): {
  operator: OperatorService;
  calls: RecordedCall[];
} {
  const calls: RecordedCall[] = [];
  const wrap = <T extends object>(group: string, target: T): T =>
    new Proxy(target, {
      get(object, property, receiver) {
        const value = Reflect.get(object, property, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          calls.push({ method: `${group}.${String(property)}`, args });
          return value.apply(object, args);
        };
      },
    });
  const operator: OperatorService = {
    access: wrap("access", inner.access),
    approvals: wrap("approvals", inner.approvals),
    budgets: wrap("budgets", inner.budgets),
    runs: wrap("runs", inner.runs),
    conversations: wrap("conversations", inner.conversations),
    outbox: wrap("outbox", inner.outbox),
    schedules: wrap("schedules", inner.schedules),
    search: (...args) => {
      calls.push({ method: "search", args });
      return inner.search(...args);
    },
  };
  return { operator, calls };
}

/** An operator service for servers whose tests never reach the operator API. */
export const unusedOperator: OperatorService = new Proxy({} as OperatorService, {
  get(_target, group) {
    return new Proxy(
      {},
      {
        get(_inner, method) {
          return () =>
            Promise.reject(new Error(`unexpected operator call ${String(group)}.${String(method)}`));
        },
      },
    );
  },
});

export interface TestServices {
  services: HttpServices;
  readiness: Readiness;
  operatorActions: { count: number };
}

export function testServices(overrides: Partial<HttpServices> & { operator: OperatorService }): TestServices {
  const readiness: Readiness = { ready: true, checks: { store: { ok: true } } };
  const operatorActions = { count: 0 };
  const web: WebChannel = overrides.web ?? createWebChannel();
  const services: HttpServices = {
    follow: (_id: string, _after: number, signal: AbortSignal) => never(signal),
    readiness: async () => structuredClone(readiness),
    metrics: async () => "# TYPE switchboard_up gauge\nswitchboard_up 1\n",
    routes: [],
    operatorToken: null,
    onOperatorAction: () => {
      operatorActions.count += 1;
    },
    ...overrides,
    web,
  };
  return { services, readiness, operatorActions };
}

async function* never(signal: AbortSignal): AsyncGenerator<RuntimeEvent> {
  await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** A logger whose lines the test can read (to prove what is never logged). */
export function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: createLogger({ level: "debug", write: (line) => lines.push(line) }), lines };
}
