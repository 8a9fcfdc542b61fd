/**
 * The approval scenario the Discord and Slack end-to-end tests share: a real stdio MCP server
 * whose `append_note` appends to a file (approval "ask"), the model asking to call it, and the
 * asker's press on the prompt's Approve button: the effect exactly once, the presser's notice,
 * the prompt showing the outcome without buttons, and a redelivered or repeated press deciding
 * nothing more. Each platform supplies how it sends, shows and presses.
 */
import { Database } from "bun:sqlite";
import { expect } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FakeLlmServer } from "../../support/llm/fake-llm-server.ts";
import { eventually } from "./gateway-process.ts";

const STDIO_SERVER = join(import.meta.dir, "..", "..", "fixtures", "mcp", "stdio-server.ts");
const TIMEOUT = 20_000;

/** The file the notes MCP server appends to, one line per call that ran. */
export interface Notes {
  file: string;
  lines(): string[];
  count(line: string): number;
}

export function notesIn(dir: string): Notes {
  const file = join(dir, "notes.txt");
  const lines = () => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : []);
  return { file, lines, count: (line) => lines().filter((l) => l === line).length };
}

/**
 * The states of the approval requests whose tool input has `text`, oldest first, read from the
 * gateway's SQLite file. A press is answered only once it was judged, so a decision it made shows
 * here at once: no need to wait and see whether the effect happens.
 */
export function approvalStates(dbPath: string, text: string): string[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return (
      db
        .query("SELECT state FROM approvals WHERE json_extract(input, '$.text') = ? ORDER BY created_at_ms")
        .all(text) as Array<{ state: string }>
    ).map((row) => row.state);
  } finally {
    db.close();
  }
}

/** Writes the gateway's config file: `surfaces`, and the notes MCP server. Returns its path. */
export function writeApprovalConfig(dir: string, notes: Notes, surfaces: Record<string, unknown>): string {
  const config = join(dir, "switchboard.json");
  writeFileSync(
    config,
    JSON.stringify({
      version: 1,
      surfaces,
      mcpServers: {
        notes: { command: process.execPath, args: [STDIO_SERVER], env: { NOTES_FILE: notes.file } },
      },
    }),
  );
  return config;
}

/** The model asks to append `text` when the user's message contains `prompt`, then reports the result. */
export function appendRule(llm: FakeLlmServer, prompt: string, text: string): void {
  llm.setRules([
    {
      match: { lastUserContains: prompt, lastRole: "user" },
      reply: { kind: "tool-call", toolName: "notes_append_note", input: { text } },
    },
    { match: { lastRole: "tool" }, reply: { kind: "text", text: "Done: {{lastToolResult}}" } },
  ]);
}

export interface ApprovalPlatform<Prompt, Press> {
  llm: FakeLlmServer;
  notes: Notes;
  /** The asker's name as decisions show it ("Approved by alice"). */
  asker: string;
  /** Sends `text` as the asker. */
  ask(text: string): void;
  /** The approval prompt mentioning `text`, once it shows its buttons: as first shown, not as edited later. */
  promptFor(text: string): Promise<Prompt>;
  /** The labels of the prompt's buttons, in order. */
  labels(prompt: Prompt): string[];
  /** Presses the button `label` as the asker; `stale`: again, on the keyboard already decided. */
  press(prompt: Prompt, label: string, options?: { stale?: boolean }): Press;
  /** The notice the presser got. */
  noticeOf(press: Press): Promise<string>;
  /** Delivers the same press again, as the platform does when it missed the acknowledgement. */
  redeliver(press: Press): void;
  /** What the prompt shows now. */
  current(prompt: Prompt): { text: string; buttons: boolean } | undefined;
  /** The texts of the chat's messages (the answers among them). */
  chatTexts(): string[];
  /** The platform's own checks of the prompt as first shown. */
  checkPrompt(prompt: Prompt): void;
  /** The platform's own checks of how the press was acknowledged, once its notice came. */
  checkPress(press: Press): Promise<void>;
}

export async function runApproveOnceScenario<Prompt, Press>(
  p: ApprovalPlatform<Prompt, Press>,
): Promise<void> {
  appendRule(p.llm, "remember eggs", "eggs");
  p.ask("please remember eggs");
  const prompt = await p.promptFor("eggs");
  expect(p.labels(prompt)).toEqual(["Approve", "Deny", "Always allow in this chat"]);
  p.checkPrompt(prompt);
  expect(p.notes.lines()).toEqual([]);

  const press = p.press(prompt, "Approve");
  expect(await p.noticeOf(press)).toBe("Approved.");
  await p.checkPress(press);
  const answer = await eventually(
    () => p.chatTexts().find((t) => t.startsWith("Done:")),
    TIMEOUT,
    "the answer after the approval",
  );
  expect(answer).toContain('appended "eggs"');
  expect(p.notes.count("eggs")).toBe(1);
  await eventually(
    () => {
      const shown = p.current(prompt);
      return shown?.text.includes(`Approved by ${p.asker}`) && !shown.buttons;
    },
    TIMEOUT,
    "the prompt to show the outcome without buttons",
  );

  // The same press delivered again, and a second press of the stale button, change nothing.
  p.redeliver(press);
  const again = p.press(prompt, "Approve", { stale: true });
  expect(await p.noticeOf(again)).toContain("Already decided");
  await Bun.sleep(500);
  expect(p.notes.count("eggs")).toBe(1);
  expect(p.chatTexts().filter((t) => t.startsWith("Done:"))).toHaveLength(1);
}
