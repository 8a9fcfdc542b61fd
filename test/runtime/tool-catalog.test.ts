import { expect, test } from "bun:test";
import { jsonSchema, type ToolSet, tool } from "ai";
import {
  type CatalogEntry,
  createToolSearchTool,
  MAX_SELECTED_TOOLS,
  measureCatalog,
  offeredNames,
  planCatalog,
  rankCatalog,
  selectedTools,
  TOOL_SEARCH,
} from "../../src/runtime/tool-catalog.ts";
import type { MessagePart } from "../../src/runtime/types.ts";

const entry = (name: string, description = "", bytes = 100): CatalogEntry => ({ name, description, bytes });
const searchResult = (id: string, selected: string[], isError = false): MessagePart => ({
  type: "tool-result",
  toolCallId: id,
  toolName: TOOL_SEARCH,
  output: { selected, tools: [], note: "" },
  isError,
});

test("a tool's size is its name, description and JSON schema in UTF-8 bytes", async () => {
  const schema = { type: "object", properties: { q: { type: "string" } } } as const;
  const tools: ToolSet = { find_é: tool({ description: "Finds", inputSchema: jsonSchema(schema) }) };
  const [measured] = await measureCatalog(tools);
  const expected = Buffer.byteLength(
    JSON.stringify({ name: "find_é", description: "Finds", parameters: schema }),
  );
  expect(measured).toEqual({ name: "find_é", description: "Finds", bytes: expected });
});

test("a schema shared by the tools of many runs is serialised once; each tool's name and description still count", async () => {
  const schema = { type: "object", properties: { city: { type: "string", description: "Città" } } } as const;
  const input = jsonSchema(schema);
  let reads = 0;
  Object.defineProperty(input, "jsonSchema", {
    get: () => {
      reads += 1;
      return schema;
    },
  });
  const runA: ToolSet = { weather: tool({ description: "Weather now", inputSchema: input }) };
  const runB: ToolSet = { forecast_ü: tool({ description: "Forecast for days", inputSchema: input }) };
  const [a] = await measureCatalog(runA);
  const [b] = await measureCatalog(runB);
  expect(reads).toBe(1);
  expect(a!.bytes).toBe(
    Buffer.byteLength(JSON.stringify({ name: "weather", description: "Weather now", parameters: schema })),
  );
  expect(b!.bytes).toBe(
    Buffer.byteLength(
      JSON.stringify({ name: "forecast_ü", description: "Forecast for days", parameters: schema }),
    ),
  );
});

test("ranking: exact name, then name containing the query, then words in the name over the description", () => {
  const entries = [
    entry("crm_delete_contact", "Deletes a contact"),
    entry("crm_create_issue", "Opens an issue"),
    entry("tracker_issue_create", "Creates an issue in the tracker"),
    entry("mail_send", "Sends mail about an issue"),
    entry("weather_now", "Current weather"),
  ];
  expect(rankCatalog("crm_create_issue", entries).map((e) => e.name)[0]).toBe("crm_create_issue");
  expect(rankCatalog("create issue", entries).map((e) => e.name)).toEqual([
    "crm_create_issue",
    "tracker_issue_create",
    "mail_send",
  ]);
  expect(rankCatalog("nothing like it", entries)).toEqual([]);
  const many = Array.from({ length: 30 }, (_, i) => entry(`t_${i}_thing`));
  expect(rankCatalog("thing", many)).toHaveLength(8);
});

test("within the budget nothing is deferred; over it, pinned tools and tool_search are offered, then the selection", () => {
  const entries = [
    entry("web_fetch", "", 500),
    ...Array.from({ length: 10 }, (_, i) => entry(`s_t${i}`, "", 500)),
  ];
  const within = planCatalog(entries, 10_000, () => false);
  expect(within.deferred).toBe(false);
  expect(offeredNames(within, [])).toEqual(entries.map((e) => e.name));
  const over = planCatalog(entries, 4000, (name) => name === "web_fetch");
  expect(over).toMatchObject({ deferred: true, totalBytes: 5500, pinned: ["web_fetch"] });
  expect(over.searchable).toHaveLength(10);
  expect(offeredNames(over, [])).toEqual(["web_fetch", TOOL_SEARCH]);
  const parts: MessagePart[] = [searchResult("a", ["s_t1", "s_t2"]), searchResult("b", ["s_t3", "unknown"])];
  expect(offeredNames(over, parts)).toEqual(["web_fetch", TOOL_SEARCH, "s_t3", "s_t1", "s_t2"]);
});

test("the selection: latest searches first, failed searches and unknown names ignored, bounded", () => {
  const catalog = new Set(Array.from({ length: 40 }, (_, i) => `t${i}`));
  const parts: MessagePart[] = [
    searchResult("a", ["t1", "t2"]),
    searchResult("b", ["t9"], true),
    { type: "tool-result", toolCallId: "c", toolName: "other", output: { selected: ["t5"] }, isError: false },
    searchResult("d", ["t3", "t1", "gone"]),
  ];
  expect(selectedTools(parts, catalog)).toEqual(["t3", "t1", "t2"]);
  const wide = Array.from({ length: 5 }, (_, i) =>
    searchResult(`w${i}`, [...catalog].slice(i * 8, i * 8 + 8)),
  );
  expect(selectedTools(wide, catalog)).toHaveLength(MAX_SELECTED_TOOLS);
  expect(selectedTools(wide, catalog)[0]).toBe("t32");
});

test("tool_search returns names and descriptions, never schemas, and what it found becomes the selection", async () => {
  const plan = planCatalog(
    [
      entry("pinned_one"),
      entry("crm_create_issue", "Opens an issue"),
      entry("crm_close_issue", "Closes an issue"),
    ],
    150,
    (name) => name === "pinned_one",
  );
  const search = createToolSearchTool(plan);
  const output = await search.execute!({ query: "close issue" }, { toolCallId: "x", messages: [] } as never);
  expect(output).toMatchObject({ selected: ["crm_close_issue", "crm_create_issue"] });
  expect(JSON.stringify(output)).not.toContain("parameters");
  const parts: MessagePart[] = [
    { type: "tool-result", toolCallId: "x", toolName: TOOL_SEARCH, output, isError: false },
  ];
  expect(offeredNames(plan, parts)).toEqual([
    "pinned_one",
    TOOL_SEARCH,
    "crm_close_issue",
    "crm_create_issue",
  ]);
});
