/**
 * `GET /api/openapi.json`: an OpenAPI 3.1 document of every /api route the server mounts, made
 * from the routes themselves and the zod schemas in openapi-docs.ts (zod 4's JSON Schema export,
 * draft 2020-12, which OpenAPI 3.1 uses).
 */
import { z } from "zod";
import { errorBody } from "./conversation-schemas.ts";
import { ROUTE_DOCS, type RouteDoc } from "./openapi-docs.ts";
import { json } from "./respond.ts";
import type { Route } from "./router.ts";

/** `/api/runs/:id` → `/api/runs/{id}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

function schemaOf(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return rest;
}

const ERROR_RESPONSE = {
  description: "An error: `{ error: { code, message } }`; the message names what to change.",
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
};

function operation(route: Route, path: string, doc: RouteDoc | undefined): Record<string, unknown> {
  const params = [...path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((match) => ({
    name: match[1],
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
  const query = doc?.query ? schemaOf(doc.query, "input") : null;
  const queryParams = Object.entries((query?.properties as Record<string, unknown> | undefined) ?? {}).map(
    ([name, schema]) => ({
      name,
      in: "query",
      required: ((query?.required as string[] | undefined) ?? []).includes(name),
      schema,
    }),
  );
  const success = doc?.stream
    ? { description: "Server-Sent Events.", content: { "text/event-stream": { schema: { type: "string" } } } }
    : {
        description: doc?.answer?.description ?? "The result as JSON.",
        content: {
          "application/json": {
            schema: doc?.answer?.schema ? schemaOf(doc.answer.schema, "output") : { type: "object" },
          },
        },
      };
  return {
    operationId: `${route.method.toLowerCase()}${path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? "").toUpperCase())}`,
    summary: doc?.summary ?? "Undocumented.",
    tags: [doc?.tag ?? "operator"],
    security: route.access === "api" ? [{ operatorToken: [] }, { appToken: [] }] : [{ operatorToken: [] }],
    ...(params.length + queryParams.length > 0 ? { parameters: [...params, ...queryParams] } : {}),
    ...(doc?.body
      ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: schemaOf(doc.body, "input") } },
          },
        }
      : {}),
    responses: {
      [String(doc?.answer?.status ?? 200)]: success,
      "400": ERROR_RESPONSE,
      "401": ERROR_RESPONSE,
      "403": ERROR_RESPONSE,
      "404": ERROR_RESPONSE,
    },
  };
}

/** The document for `routes` (those under /api). */
export function openApiDocument(routes: readonly Route[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    if (!route.pattern.startsWith("/api/")) continue;
    const path = openApiPath(route.pattern);
    const doc = ROUTE_DOCS[`${route.method} ${path}`];
    paths[path] ??= {};
    paths[path]![route.method.toLowerCase()] = operation(route, path, doc);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "switchboard",
      version: "1",
      description:
        "The conversation API (app or operator tokens) and the operator API (operator tokens). See docs/api.md and docs/operators.md.",
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    tags: [
      { name: "conversation", description: "Conversations, runs' events, approvals and proactive sends." },
      { name: "operator", description: "What operators see and do." },
    ],
    paths,
    components: {
      securitySchemes: {
        operatorToken: { type: "http", scheme: "bearer", description: "SWITCHBOARD_OPERATOR_TOKEN(S)" },
        appToken: { type: "http", scheme: "bearer", description: "A token of SWITCHBOARD_APP_TOKENS" },
      },
      schemas: { Error: schemaOf(errorBody, "output") },
    },
  };
}

/** The route, serving the document of `routes` (read when first asked: the list is complete by then). */
export function openApiRoute(routes: readonly Route[]): Route {
  let document: Record<string, unknown> | null = null;
  return {
    method: "GET",
    pattern: "/api/openapi.json",
    access: "api",
    handle: async () => {
      document ??= openApiDocument(routes);
      return json(document);
    },
  };
}
