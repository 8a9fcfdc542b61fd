/**
 * Plays the operator for ambiguous outbox records, through the real CLI against the running
 * gateway's API (so its delivery worker reacts at once): look in the chat, then
 * `outbox resolve ID --delivered` when the answer is there, `outbox retry ID` when it is not.
 * An ambiguous record holds back every later answer to its chat, so a run cannot settle without this.
 */
import { join } from "node:path";
import type { OutboxRecord } from "../../outbox/types.ts";
import { countIn, fingerprintOf } from "./invariants.ts";
import { type ChatMessage, chatOfTarget } from "./snapshot.ts";

const ACTOR = "chaos-operator";
const CLI = join(import.meta.dir, "..", "..", "src", "cli", "main.ts");

export interface OperatorAccess {
  url: string;
  token: string;
}

async function cli(access: OperatorAccess, args: string[]): Promise<string> {
  const child = Bun.spawn([process.execPath, CLI, ...args, "--url", access.url], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      SWITCHBOARD_OPERATOR_TOKEN: access.token,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`switchboard ${args.join(" ")} exited ${code}: ${stderr.trim()}`);
  return stdout;
}

export interface OperatorDecision {
  id: string;
  action: "resolved-delivered" | "retried";
}

/**
 * Resolves every ambiguous record once. `chatOf(chat)` returns the bot's visible messages there.
 * A record is looked up by its answer marker (`a-<id>`; a partial stream preview counts as seen,
 * as an operator would judge it), or by its first line when it has none. With `minAgeMs`, records
 * that became ambiguous more recently are left for a later round: a send that hung may still be
 * taking effect, and "not in the chat" would be judged too early.
 */
export async function resolveAmbiguous(
  access: OperatorAccess,
  chatOf: (chat: string) => ChatMessage[],
  options: { minAgeMs?: number } = {},
): Promise<OperatorDecision[]> {
  const listed = JSON.parse(
    await cli(access, ["outbox", "list", "--state", "ambiguous", "--json"]),
  ) as OutboxRecord[];
  const settledBefore = Date.now() - (options.minAgeMs ?? 0);
  const records = listed.filter((record) => record.updatedAtMs <= settledBefore);
  const decisions: OperatorDecision[] = [];
  for (const record of records) {
    const needle = needleOf(record.markdown);
    const seen =
      needle !== null &&
      countIn(chatOf(chatOfTarget(record.channel, record.target, record.account)), needle) > 0;
    try {
      if (seen) {
        await cli(access, [
          "outbox",
          "resolve",
          record.id,
          "--delivered",
          "--note",
          "seen in the chat",
          "--actor",
          ACTOR,
        ]);
        decisions.push({ id: record.id, action: "resolved-delivered" });
      } else {
        await cli(access, ["outbox", "retry", record.id, "--note", "not in the chat", "--actor", ACTOR]);
        decisions.push({ id: record.id, action: "retried" });
      }
    } catch (error) {
      // The gateway may have died (a kill) or the record moved on meanwhile: the next round looks again.
      if (!String((error as Error).message).includes("exited 4")) throw error;
    }
  }
  return decisions;
}

/**
 * What proves a record shown in its chat: an approval prompt's id (every prompt's first line reads
 * alike, "Approval needed: <tool>", so another prompt there would pass for it), else the record's
 * fingerprint.
 */
function needleOf(markdown: string): string | null {
  return /\/approve (ap_[0-9a-f]+)/.exec(markdown)?.[1] ?? fingerprintOf(markdown);
}

/**
 * `switchboard access approve CODE` against the gateway's API: "approved", or what refused it
 * ("already approved" for a code approved before: a second redemption changes nothing).
 */
export async function approvePairing(access: OperatorAccess, code: string): Promise<string> {
  try {
    await cli(access, ["access", "approve", code, "--json"]);
    return "approved";
  } catch (error) {
    const message = String((error as Error).message);
    if (message.includes("already approved")) return "already approved";
    throw error;
  }
}
