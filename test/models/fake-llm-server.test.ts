import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, tool } from "ai";
import { z } from "zod";
import { fakeLlmControl, startFakeLlmServer } from "../support/llm/fake-llm-server.ts";

const server = startFakeLlmServer({
  rules: [{ match: { lastUserContains: "built-in" }, reply: { kind: "text", text: "from construction" } }],
});
const control = fakeLlmControl(server.url);
afterAll(() => server.stop());
beforeEach(() => server.reset());

function completion(body: Record<string, unknown>, signal?: AbortSignal) {
  return fetch(`${server.openaiBaseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", ...body }),
    signal,
  });
}

const userSays = (text: string) => ({ messages: [{ role: "user", content: text }] });

describe("fake LLM server", () => {
  test("echoes the last user text when no rule matches, and answers construction-time rules", async () => {
    const echo = (await (await completion(userSays("hello there"))).json()) as {
      choices: Array<{ message: { content: string } }>;
    };
    expect(echo.choices[0]?.message.content).toBe("echo: hello there");
    const scripted = (await (await completion(userSays("the built-in rule"))).json()) as typeof echo;
    expect(scripted.choices[0]?.message.content).toBe("from construction");
    expect(server.requests().map((r) => r.ruleIndex)).toEqual([null, 0]);
  });

  test("is scripted over HTTP: rules, the request log and reset", async () => {
    await control.setRules([
      { match: { lastUserContains: "flaky" }, reply: { kind: "http-error", status: 503 }, times: 1 },
    ]);
    await control.addRules([
      { match: { lastRole: "tool" }, reply: { kind: "text", text: "thanks for the result" } },
    ]);

    expect((await completion(userSays("flaky call"))).status).toBe(503);
    expect((await completion(userSays("flaky call"))).status).toBe(200); // the rule expired after one use
    const afterTool = await completion({
      messages: [
        { role: "user", content: "use the tool" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: "42" },
      ],
    });
    expect(JSON.stringify(await afterTool.json())).toContain("thanks for the result");
    // Construction-time rules were replaced, so this one now echoes.
    expect(JSON.stringify(await (await completion(userSays("built-in"))).json())).toContain("echo: built-in");

    const logged = await control.requests();
    expect(logged.map((r) => [r.index, r.lastUserText, r.ruleIndex])).toEqual([
      [0, "flaky call", 0],
      [1, "flaky call", null],
      [2, "use the tool", 1],
      [3, "built-in", null],
    ]);

    await control.reset();
    expect(await control.requests()).toEqual([]);
    expect(JSON.stringify(await (await completion(userSays("built-in"))).json())).toContain(
      "from construction",
    );
  });

  test("matches a tool result by the arguments of the call it answers", async () => {
    server.setRules([
      {
        match: { lastRole: "tool", lastToolInputContains: '"p00001"' },
        reply: { kind: "text", text: "about p00001" },
      },
    ]);
    const afterCall = (args: string) =>
      completion({
        messages: [
          { role: "user", content: "a newer message" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: args } }],
          },
          { role: "tool", tool_call_id: "c1", content: "done" },
        ],
      });
    expect(JSON.stringify(await (await afterCall('{"text":"p00001"}')).json())).toContain("about p00001");
    expect(JSON.stringify(await (await afterCall('{"text":"p00002"}')).json())).toContain("echo:");
  });

  test("rejects malformed rules with a 400 that says what is wrong", async () => {
    const response = await fetch(`${server.url}/__control/rules`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rules: [{ reply: { kind: "text", txt: "typo" } }] }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toContain("invalid rules");
    await expect(control.setRules([{ reply: { kind: "http-error", status: 200 } }])).rejects.toThrow(
      "HTTP 400",
    );
  });

  test("answers non-streaming requests with chat.completion JSON, tool calls included", async () => {
    server.setRules([
      {
        match: { lastUserContains: "weather" },
        reply: { kind: "tool-call", toolName: "getWeather", input: { city: "Oslo" } },
      },
    ]);
    const model = createOpenAICompatible({ name: "fake", baseURL: server.openaiBaseUrl }).chatModel("m");
    const plain = await generateText({ model, prompt: "hi there" });
    expect(plain.text).toBe("echo: hi there");
    expect(plain.usage.inputTokens).toBeGreaterThan(0);

    const withTool = await generateText({
      model,
      prompt: "weather in Oslo?",
      tools: { getWeather: tool({ inputSchema: z.object({ city: z.string() }) }) },
    });
    expect(withTool.toolCalls.map((c) => [c.toolName, c.input])).toEqual([["getWeather", { city: "Oslo" }]]);
    expect(server.requests().map((r) => r.stream)).toEqual([false, false]);
  });

  test("streams SSE chunks with the scripted pacing and a usage chunk before [DONE]", async () => {
    server.setRules([
      { reply: { kind: "text", text: "a b c", chunks: 3, chunkDelayMs: 40, usage: { costUsd: 0.01 } } },
    ]);
    const startedMs = Date.now();
    const body = await (
      await completion({ ...userSays("x"), stream: true, stream_options: { include_usage: true } })
    ).text();
    const events = body
      .split("\n\n")
      .filter((line) => line.startsWith("data: "))
      .map((line) => line.slice(6));

    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(110);
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "" });
    expect(chunks.slice(1, 4).map((c) => c.choices[0].delta.content)).toEqual(["a ", "b ", "c"]);
    expect(chunks[4].choices[0].finish_reason).toBe("stop");
    expect(chunks[5].choices).toEqual([]);
    expect(chunks[5].usage.cost).toBe(0.01);
  });

  test("a hanging request ends when the client aborts, and the server keeps serving", async () => {
    server.setRules([{ match: { lastUserContains: "hang" }, reply: { kind: "hang" } }]);
    const controller = new AbortController();
    const hanging = completion({ ...userSays("please hang"), stream: true }, controller.signal);
    await Bun.sleep(50);
    controller.abort();
    await expect(hanging).rejects.toThrow();
    expect((await completion(userSays("still alive?"))).status).toBe(200);
  }, 5_000);
});

describe("fake LLM server as a standalone process", () => {
  test("prints its URL and serves until terminated", async () => {
    const child = Bun.spawn([process.execPath, "test/support/llm/fake-llm-server.ts", "--port", "0"], {
      cwd: `${import.meta.dir}/../..`,
      stdout: "pipe",
      stderr: "pipe",
    });
    try {
      const reader = child.stdout.getReader();
      const { value } = await reader.read();
      const url = new TextDecoder().decode(value).trim();
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const standalone = fakeLlmControl(url);
      await standalone.setRules([{ reply: { kind: "text", text: "from the other process" } }]);
      const response = await fetch(`${url}/api/v1/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      });
      expect(JSON.stringify(await response.json())).toContain("from the other process");
      expect((await standalone.requests()).map((r) => r.path)).toEqual(["/api/v1/chat/completions"]);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await child.exited).toBe(0);
  }, 10_000);

  test("refuses a bad --port with usage and exit code 2", async () => {
    const child = Bun.spawn([process.execPath, "test/support/llm/fake-llm-server.ts", "--port", "http"], {
      cwd: `${import.meta.dir}/../..`,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await child.exited).toBe(2);
    expect(await new Response(child.stderr).text()).toContain(
      "usage: bun test/support/llm/fake-llm-server.ts",
    );
  }, 10_000);
});
