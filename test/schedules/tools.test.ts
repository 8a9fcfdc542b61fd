import { afterEach, describe, expect, test } from "bun:test";
import { generateText, stepCountIs, type ToolSet } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { runScheduleCommand } from "../../schedules/commands.ts";
import { parseScheduleCommand } from "../../schedules/parse.ts";
import { createScheduleTools } from "../../schedules/tools.ts";
import { SwitchboardError } from "../../src/errors.ts";
import { CONVERSATION, createHarness } from "./support/harness.ts";

let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** Has a scripted model call one tool through the real AI SDK loop and returns what the tool produced. */
async function callTool(tools: ToolSet, toolName: string, input: unknown) {
  const model = new MockLanguageModelV4({
    doGenerate: {
      content: [{ type: "tool-call", toolCallId: "call_1", toolName, input: JSON.stringify(input) }],
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
      usage: {
        inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: 5, text: 0, reasoning: 0 },
      },
      warnings: [],
    },
  });
  const result = await generateText({
    model,
    tools,
    messages: [{ role: "user", content: "remind me" }],
    stopWhen: stepCountIs(1),
  });
  const step = result.steps[0];
  const error = step?.content.find((part) => part.type === "tool-error");
  if (error && "error" in error) return { thrown: error.error };
  const toolResult = step?.toolResults[0];
  if (!toolResult) throw new Error(`the model's call to ${toolName} produced no result`);
  return { output: toolResult.output as Record<string, unknown> };
}

function setup(options: Parameters<typeof createHarness>[1] = {}) {
  const h = createHarness("2026-11-30T09:00:00Z", options);
  cleanups.push(() => h.database.close());
  let fenceCalls = 0;
  let fenceLost = false;
  const fence = async () => {
    fenceCalls += 1;
    if (fenceLost) throw new SwitchboardError("fence_lost", "run run_1 lost ownership");
  };
  const tools = createScheduleTools({
    service: h.service,
    conversation: CONVERSATION,
    fence,
    timezone: "Europe/Berlin",
  });
  return {
    ...h,
    tools,
    fenceCalls: () => fenceCalls,
    loseFence: () => {
      fenceLost = true;
    },
  };
}

describe("schedule tools through the AI SDK", () => {
  test("schedule_after creates an agent schedule in this conversation, fenced", async () => {
    const h = setup();
    const { output } = await callTool(h.tools, "schedule_after", { seconds: 600, prompt: "Check the oven." });
    expect(output).toMatchObject({
      ok: true,
      schedule: {
        timing: "once",
        nextRunAt: "2026-11-30T09:10:00.000Z",
        state: "active",
        prompt: "Check the oven.",
      },
    });
    expect(h.fenceCalls()).toBe(1);
    const [stored] = await h.service.list(CONVERSATION.conversationId);
    expect(stored).toMatchObject({ createdBy: "agent", replyTarget: "tg:42", channel: "telegram" });
  });

  test("schedule_at reads offsets, falls back to the conversation's zone, and refuses nonsense with a hint", async () => {
    const h = setup();
    expect(
      (await callTool(h.tools, "schedule_at", { at: "2026-12-01T09:00:00+01:00", prompt: "Call mum." }))
        .output,
    ).toMatchObject({ ok: true, schedule: { nextRunAt: "2026-12-01T08:00:00.000Z" } });
    expect(
      (await callTool(h.tools, "schedule_at", { at: "2026-12-01T10:00", prompt: "x" })).output,
    ).toMatchObject({
      schedule: { nextRunAt: "2026-12-01T09:00:00.000Z" },
    });
    expect((await callTool(h.tools, "schedule_at", { at: "next tuesday", prompt: "x" })).output).toEqual({
      ok: false,
      error: '"next tuesday" is not a date and time like 2026-12-01T09:00.',
      hint: "Use ISO 8601, e.g. 2026-12-01T09:00:00+01:00.",
    });
    expect(
      (await callTool(h.tools, "schedule_at", { at: "2020-01-01T00:00:00Z", prompt: "x" })).output,
    ).toMatchObject({
      ok: false,
      error: "That time (2020-01-01T00:00:00.000Z) is in the past.",
    });

    const noZone = createScheduleTools({
      service: h.service,
      conversation: CONVERSATION,
      fence: async () => {},
    });
    expect(
      (await callTool(noZone, "schedule_at", { at: "2026-12-01T10:00", prompt: "x" })).output,
    ).toMatchObject({
      ok: false,
      hint: "Add a UTC offset, e.g. 2026-12-01T09:00:00+01:00, or ask the user for their time zone.",
    });
  });

  test("schedule_every validates the zone and the cron expression and returns refusals as output", async () => {
    const h = setup();
    const created = await callTool(h.tools, "schedule_every", {
      cron: "0 9 * * 1-5",
      timezone: "America/New_York",
      prompt: "Summarise my inbox.",
    });
    expect(created.output).toMatchObject({
      ok: true,
      schedule: { timing: "cron 0 9 * * 1-5 (America/New_York)", nextRunAt: "2026-11-30T14:00:00.000Z" },
    });
    const badZone = await callTool(h.tools, "schedule_every", {
      cron: "0 9 * * *",
      timezone: "EST5",
      prompt: "x",
    });
    expect(badZone.output).toMatchObject({
      ok: false,
      hint: "Use a zone name like Europe/Berlin, America/New_York or UTC.",
    });
    const fourFields = await callTool(h.tools, "schedule_every", {
      cron: "0 9 * *",
      timezone: "UTC",
      prompt: "x",
    });
    expect(fourFields.output).toEqual({
      ok: false,
      error:
        '"0 9 * *" is not a valid cron expression: a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one has 4.',
      hint: "Example: 0 9 * * 1-5 (weekdays at 09:00).",
    });
  });

  test("the conversation limit is a refusal the model can act on", async () => {
    const h = setup({ limits: { maxSchedulesPerConversation: 1 } });
    await callTool(h.tools, "schedule_after", { seconds: 60, prompt: "one" });
    expect((await callTool(h.tools, "schedule_after", { seconds: 60, prompt: "two" })).output).toEqual({
      ok: false,
      error: "This chat already has 1 schedules, the limit is 1.",
      hint: "Cancel one first (/schedules lists them, /cancel <id> removes one).",
    });
  });

  test("list and cancel see only this conversation; another conversation's id looks unknown", async () => {
    const h = setup();
    const foreign = await h.service.create({
      ...CONVERSATION,
      conversationId: "conv_other",
      chatKey: "telegram:1:dm:other",
      createdBy: "user",
      prompt: "secret plan",
      when: { kind: "after", delayMs: 60_000 },
    });
    const mine = await h.service.create({
      ...CONVERSATION,
      createdBy: "user",
      prompt: "mine",
      when: { kind: "after", delayMs: 60_000 },
    });
    const listed = await callTool(h.tools, "schedule_list", {});
    expect((listed.output?.schedules as Array<{ id: string }> | undefined)?.map((s) => s.id)).toEqual([
      mine.id,
    ]);

    const foreignCancel = await callTool(h.tools, "schedule_cancel", { id: foreign.id });
    const unknownCancel = await callTool(h.tools, "schedule_cancel", { id: "sch_nope" });
    expect(foreignCancel.output).toEqual({
      ok: false,
      error: `No schedule with id ${foreign.id} in this conversation.`,
      hint: "Call schedule_list to see this conversation's schedule ids.",
    });
    expect(JSON.stringify(unknownCancel.output).replace("sch_nope", foreign.id)).toBe(
      JSON.stringify(foreignCancel.output),
    );
    expect((await h.service.get(foreign.id))?.state).toBe("active");
    expect(h.fenceCalls()).toBe(0);

    expect((await callTool(h.tools, "schedule_cancel", { id: mine.id })).output).toMatchObject({
      ok: true,
      schedule: { id: mine.id, state: "cancelled" },
    });
    expect(h.fenceCalls()).toBe(1);
  });

  test("a lost fence stops the write: the tool errors and nothing is stored", async () => {
    const h = setup();
    h.loseFence();
    const result = await callTool(h.tools, "schedule_after", { seconds: 60, prompt: "x" });
    expect(result.thrown).toBeInstanceOf(SwitchboardError);
    expect((result.thrown as SwitchboardError).code).toBe("fence_lost");
    expect(await h.service.list(CONVERSATION.conversationId)).toEqual([]);
  });
});

describe("chat commands end to end", () => {
  test("parse → run → reply, scoped to the conversation", async () => {
    const h = setup();
    let zone: string | null = null;
    const run = async (text: string) => {
      const parsed = parseScheduleCommand(text, { nowMs: h.time.now(), timezone: zone });
      if (!parsed) throw new Error(`${text} is not a schedule command`);
      if (!parsed.ok) return `${parsed.error} Example: ${parsed.example}`;
      return runScheduleCommand(parsed.command, {
        service: h.service,
        conversation: CONVERSATION,
        timezone: zone,
        setTimezone: async (timezone) => {
          zone = timezone;
        },
      });
    };
    expect(await run("/every 1d water the plants")).toContain("Set it first with /tz");
    expect(await run("/tz europe/berlin")).toBe("Time zone set to Europe/Berlin.");
    const reply = await run("/every 0 9 * * 1-5 summarise my inbox");
    expect(reply).toMatch(
      /^Scheduled sch_\w+ \(cron 0 9 \* \* 1-5 \(Europe\/Berlin\), first run Tue 2026-12-01 09:00 Europe\/Berlin\)\./,
    );
    expect(await run("/every 30s too often")).toBe(
      "That schedule would fire every 30s; recurring schedules fire at most once every 5m. Use an interval of at least 5m, e.g. /every 5m or a cron such as */5 * * * *.",
    );
    expect(await run("/every * * * * * every minute")).toContain(
      "That schedule would fire every 1m; recurring schedules fire at most once every 5m.",
    );
    const list = await run("/schedules");
    expect(list.split("\n")).toHaveLength(2);
    const id = /sch_\w+/.exec(list)?.[0] as string;

    const other = await h.service.create({
      ...CONVERSATION,
      conversationId: "conv_other",
      chatKey: "telegram:1:dm:other",
      createdBy: "user",
      prompt: "not yours",
      when: { kind: "after", delayMs: 60_000 },
    });
    expect(await run(`/cancel ${other.id}`)).toBe(
      `No schedule ${other.id} in this chat. /schedules lists its schedules.`,
    );
    expect(await run(`/cancel ${id}`)).toBe(`Cancelled ${id}.`);
    expect(await run(`/cancel ${id}`)).toBe(
      `Schedule ${id} is cancelled; it cannot be cancelled. List schedules with /schedules.`,
    );
  });
});
