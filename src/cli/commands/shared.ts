import type { Page } from "../../operator/cursor.ts";
import type { OperatorService } from "../../operator/types.ts";
import type { CliIo, OptionSpec, ParsedCommand } from "../spec.ts";

/**
 * Runs `work` with the invocation's OperatorService (file or API) and always closes it. Session
 * code loads only here, so help and usage errors answer without it.
 */
export async function withOperator<T>(
  command: ParsedCommand,
  io: CliIo,
  work: (service: OperatorService) => Promise<T>,
): Promise<T> {
  const { openOperatorSession } = await import("../session.ts");
  const session = await openOperatorSession(command, io);
  try {
    return await work(session.service);
  } finally {
    await session.close();
  }
}

/** With --json the result exactly as the service returned it, else its human rendering. */
export function print<T>(command: ParsedCommand, io: CliIo, result: T, human: (result: T) => string): void {
  io.stdout(command.flag("json") ? `${JSON.stringify(result, null, 2)}\n` : human(result));
}

/** `--cursor` and `--all` of the paged list commands. */
export const PAGE_OPTIONS: Record<string, OptionSpec> = {
  cursor: {
    type: "string",
    valueName: "CURSOR",
    description: "Start after the previous page (the cursor its output ended with).",
  },
  all: {
    type: "boolean",
    description: "Follow the cursor through every page (--limit is then the page size).",
  },
};

/**
 * One page from `--cursor` (or the first), or with `--all` every page concatenated. `--json`
 * prints the items only, so scripts keep reading an array; people get a "More:" line instead.
 */
export async function readPages<T>(
  command: ParsedCommand,
  readPage: (cursor: string | undefined) => Promise<Page<T>>,
): Promise<Page<T>> {
  let page = await readPage(command.string("cursor"));
  if (!command.flag("all")) return page;
  const items = [...page.items];
  while (page.nextCursor !== null) {
    page = await readPage(page.nextCursor);
    items.push(...page.items);
  }
  return { items, nextCursor: null };
}

/** Prints a page's items: with --json exactly as the service listed them, else rendered with a "More:" line. */
export function printPage<T>(
  command: ParsedCommand,
  io: CliIo,
  page: Page<T>,
  human: (items: readonly T[]) => string,
): void {
  if (command.flag("json")) {
    io.stdout(`${JSON.stringify(page.items, null, 2)}\n`);
    return;
  }
  io.stdout(human(page.items) + moreLine(page.nextCursor));
}

export function moreLine(nextCursor: string | null): string {
  return nextCursor === null ? "" : `\nMore: repeat with --cursor ${nextCursor} (or --all).\n`;
}
