import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { isSwitchboardError } from "../../src/errors.ts";
import { type ConversationExport, parseJsonl, toJsonl, toMarkdown } from "../../src/operator/export.ts";
import { createOperatorService, type OperatorService } from "../../src/operator/service.ts";
import { tempDir } from "../support/runtime.ts";
import { type Seed, seedDatabase } from "./support/seed.ts";

let dir: ReturnType<typeof tempDir>;
let seed: Seed;
let operator: OperatorService;

beforeEach(async () => {
  dir = tempDir("switchboard-export-");
  seed = await seedDatabase(join(dir.path, "switchboard.sqlite"));
  operator = createOperatorService({ stores: seed.stores, clock: seed.clock });
});

afterEach(() => {
  seed.stores.close();
  dir.cleanup();
});

/** The settled transcript: role, text and run state of every message, in order. */
function transcript(exported: ConversationExport) {
  return exported.messages
    .filter((m) => m.runState === "completed" || m.runState === "interrupted" || m.runState === "failed")
    .map((m) => ({ role: m.role, parts: m.parts, runState: m.runState }));
}

function refusal(text: string): string {
  try {
    parseJsonl(text);
  } catch (error) {
    if (isSwitchboardError(error, "input_invalid")) return error.message;
    throw error;
  }
  throw new Error("expected input_invalid");
}

describe("conversation export and import", () => {
  test("the export holds messages in order, runs with usage, schedules and outbox history", async () => {
    const exported = (await operator.conversations.export(seed.telegram.conversationId))!;
    expect(exported.header).toMatchObject({ type: "switchboard-export", version: 1 });
    expect(exported.messages.map((m) => m.order)).toEqual(
      [...exported.messages.map((m) => m.order)].sort((a, b) => a - b),
    );
    expect(
      exported.messages.some((m) => JSON.stringify(m.parts).includes("Summarise yesterday's standup")),
    ).toBe(true);
    expect(exported.runs.length).toBe(3);
    expect(exported.runs.every((r) => "usage" in r && !("context" in r))).toBe(true);
    expect(exported.schedules.map((s) => s.prompt).sort()).toEqual(["Summarise my inbox", "Weekly report"]);
    expect(exported.outbox.map((r) => r.state).sort()).toEqual(["ambiguous", "delivered"]);
    const lines = toJsonl(exported).trim().split("\n");
    expect(JSON.parse(lines[0]!).type).toBe("switchboard-export");
    expect(lines.length).toBe(1 + exported.messages.length + 3 + 2 + 2);
    const markdown = toMarkdown(exported);
    expect(markdown).toContain("**You**");
    expect(markdown).toContain("Here is **the summary**.");
    expect(await operator.conversations.export("conv_unknown")).toBeNull();
  });

  test("export, then import: a new conversation with the same transcript; nothing is sent", async () => {
    const exported = (await operator.conversations.export(seed.telegram.conversationId))!;
    const pendingBefore = (await seed.stores.outbox.list({ limit: 100 })).length;
    const imported = await operator.conversations.import(toJsonl(exported), "operator:ops");
    expect(imported).toMatchObject({
      sourceConversationId: seed.telegram.conversationId,
      runs: 2,
      messages: 4,
    });
    expect(imported.conversationId).not.toBe(seed.telegram.conversationId);
    const again = (await operator.conversations.export(imported.conversationId))!;
    expect(transcript(again)).toEqual(transcript(exported));
    expect((await seed.stores.outbox.list({ limit: 100 })).length).toBe(pendingBefore);
  });

  test("a corrupt or future-version file is refused, naming what is wrong, and changes nothing", async () => {
    const good = toJsonl((await operator.conversations.export(seed.telegram.conversationId))!);
    const [header, ...rest] = good.trim().split("\n");
    expect(refusal("")).toContain("line 1: the file is empty");
    expect(
      refusal(`{"type":"switchboard-export","version":2,"conversationId":"c","exportedAtMs":1}\n`),
    ).toContain("line 1: format version 2 is newer than this switchboard reads (1); upgrade switchboard");
    expect(refusal(`${header}\n${rest[0]!.slice(0, 20)}\n`)).toContain("line 2: not JSON");
    expect(refusal(`${header}\n{"type":"message","order":1}\n`)).toContain("line 2: a message");
    expect(refusal(`${header}\n{"type":"photo"}\n`)).toContain(
      'line 2: "type" must be message, run, schedule or outbox',
    );
    expect(refusal(`{"hello":1}\n`)).toContain("line 1: the first line must be the header");
    const before = (await operator.conversations.list({ limit: 100 })).items.length;
    await expect(
      operator.conversations.import(`${header}\n{not json\n`, "operator:ops"),
    ).rejects.toMatchObject({
      code: "input_invalid",
    });
    expect((await operator.conversations.list({ limit: 100 })).items.length).toBe(before);
  });
});

describe("conversation branch", () => {
  test("branch at a run copies the prefix through it, with no channel; the same request returns the same copy", async () => {
    const source = (await operator.conversations.export(seed.telegram.conversationId))!;
    const runIds = [...new Set(source.messages.map((m) => m.runId))];
    const first = runIds[0]!;
    const branched = await operator.conversations.branch(seed.telegram.conversationId, first, "operator:ops");
    expect(branched).toMatchObject({ outcome: "created", throughRunId: first, runs: 1, messages: 2 });
    const copy = (await operator.conversations.export(branched.conversationId))!;
    expect(transcript(copy)).toEqual(transcript(source).slice(0, 2));
    expect(copy.schedules).toEqual([]);
    expect(copy.outbox).toEqual([]);
    const copiedRun = (await seed.stores.runtime.loadRun(copy.runs[0]!.id))!.run;
    expect(copiedRun.context).toEqual({ branched: { from: seed.telegram.conversationId, through: first } });
    // New identities and a first fence: nothing of the source's ownership carries over.
    expect(runIds).not.toContain(copiedRun.id);
    expect(copiedRun.fencingToken).toBe(1);

    const again = await operator.conversations.branch(seed.telegram.conversationId, first, "operator:ops");
    expect(again).toMatchObject({ outcome: "duplicate", conversationId: branched.conversationId });
    expect(transcript((await operator.conversations.export(branched.conversationId))!)).toEqual(
      transcript(copy),
    );

    // Without --through: the settled tip (the queued run at the end is left out).
    const tip = await operator.conversations.branch(seed.telegram.conversationId, undefined, "operator:ops");
    expect(tip).toMatchObject({ outcome: "created", throughRunId: runIds[1], runs: 2 });
    expect(transcript((await operator.conversations.export(tip.conversationId))!)).toEqual(
      transcript(source),
    );
  });

  test("an active run, a foreign run or an unknown conversation is refused", async () => {
    await expect(
      operator.conversations.branch(seed.telegram.conversationId, seed.queuedRunId, "operator:ops"),
    ).rejects.toMatchObject({ code: "state_conflict" });
    await expect(
      operator.conversations.branch(seed.telegram.conversationId, seed.failed.runId, "operator:ops"),
    ).rejects.toMatchObject({ code: "input_invalid" });
    await expect(operator.conversations.branch("conv_nope", undefined, "operator:ops")).rejects.toMatchObject(
      {
        code: "not_found",
      },
    );
  });
});
