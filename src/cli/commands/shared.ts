import type { OperatorService } from "../../operator/types.ts";
import type { CliIo, ParsedCommand } from "../spec.ts";

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
