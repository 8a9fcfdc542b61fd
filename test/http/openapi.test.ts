/**
 * GET /api/openapi.json: an OpenAPI 3.1 document of every /api route the server mounts, checked
 * structurally (every operation answers, every path parameter is declared, every $ref resolves,
 * every schema is JSON Schema 2020-12 that compiles to a validator), and open to app tokens.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ROUTE_DOCS } from "../../src/gateway/http/openapi-docs.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { capturingLogger, testServices, unusedOperator } from "./support/services.ts";

const OPERATOR = "openapi-operator-token-0001";
const APP = "openapi-app-token-00000001";
let server: HttpServer;

beforeAll(async () => {
  const { services } = testServices({
    operator: unusedOperator,
    operatorToken: OPERATOR,
    appTokens: [{ name: "crm", token: APP }],
  });
  server = await startHttpServer({ host: "127.0.0.1", port: 0, services, logger: capturingLogger().logger });
});
afterAll(() => server?.stop());

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
};
type Operation = {
  operationId: string;
  summary: string;
  parameters?: Array<{ name: string; in: string; required: boolean; schema: unknown }>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
  security: Array<Record<string, unknown>>;
};

async function document(token: string): Promise<Doc> {
  const response = await fetch(`${server.url}/api/openapi.json`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Doc;
}

test("the document lists every mounted /api route, each documented, and nothing else", async () => {
  const doc = await document(APP);
  expect(doc.openapi).toBe("3.1.0");
  const listed = Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({
      key: `${method.toUpperCase()} ${path}`,
      operation,
    })),
  );
  const undocumented = listed
    .filter((entry) => entry.operation.summary === "Undocumented.")
    .map((e) => e.key);
  expect(undocumented).toEqual([]);
  expect(listed.map((entry) => entry.key).sort()).toEqual(Object.keys(ROUTE_DOCS).sort());
  for (const route of [
    "POST /api/conversations",
    "POST /api/conversations/{id}/messages",
    "GET /api/runs/{id}/events",
    "POST /api/approvals/{id}/approve",
    "POST /api/approvals/{id}/deny",
    "POST /api/send",
    "GET /api/openapi.json",
  ])
    expect(listed.map((entry) => entry.key)).toContain(route);
});

test("the document is structurally valid OpenAPI 3.1", async () => {
  const doc = await document(OPERATOR);
  const operationIds = new Set<string>();
  const refs: string[] = [];
  const collectRefs = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(collectRefs);
    else if (value && typeof value === "object")
      for (const [key, inner] of Object.entries(value)) {
        if (key === "$ref" && typeof inner === "string") refs.push(inner);
        else collectRefs(inner);
      }
  };
  for (const [path, operations] of Object.entries(doc.paths)) {
    expect(path).toMatch(/^\/api\//);
    const pathParams = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    for (const [method, operation] of Object.entries(operations)) {
      expect(["get", "post"]).toContain(method);
      expect(operationIds.has(operation.operationId)).toBe(false);
      operationIds.add(operation.operationId);
      expect(Object.keys(operation.responses).length).toBeGreaterThan(0);
      for (const [status, response] of Object.entries(operation.responses)) {
        expect(status).toMatch(/^[1-5]\d\d$/);
        expect(response.description.length).toBeGreaterThan(0);
      }
      const declared = (operation.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
      expect(declared.sort()).toEqual([...pathParams].sort() as string[]);
      for (const parameter of operation.parameters ?? []) expect(["path", "query"]).toContain(parameter.in);
      for (const scheme of operation.security.flatMap((s) => Object.keys(s)))
        expect(Object.keys(doc.components.securitySchemes)).toContain(scheme);
      const schemas = [
        ...Object.values(operation.requestBody?.content ?? {}).map((c) => c.schema),
        ...Object.values(operation.responses).flatMap((r) =>
          Object.values(r.content ?? {}).map((c) => c.schema),
        ),
      ];
      for (const schema of schemas) {
        expect(typeof schema).toBe("object");
        collectRefs(schema);
      }
    }
  }
  collectRefs(doc.paths);
  for (const ref of refs) {
    expect(ref).toMatch(/^#\/components\/schemas\//);
    expect(doc.components.schemas[ref.slice("#/components/schemas/".length)]).toBeDefined();
  }
  const send = doc.paths["/api/send"]!.post!;
  const sendSchema = send.requestBody!.content["application/json"]!.schema as {
    required: string[];
    additionalProperties: boolean;
  };
  expect(sendSchema.required.sort()).toEqual(["channel", "idempotencyKey", "target", "text"]);
  expect(sendSchema.additionalProperties).toBe(false);
  const message = doc.paths["/api/conversations/{id}/messages"]!.post!;
  expect(JSON.stringify(message.requestBody)).toContain("idempotencyKey");
});

test("without a token the document is not served", async () => {
  expect((await fetch(`${server.url}/api/openapi.json`)).status).toBe(401);
});
