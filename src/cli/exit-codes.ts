import { isSwitchboardError, type SwitchboardErrorCode } from "../errors.ts";
import { CliUsageError } from "./usage-error.ts";

/** The CLI's exit codes; scripts may rely on them (documented in --help and docs/cli.md). */
export const EXIT = {
  ok: 0,
  /** Anything unexpected: a bug, an unreadable database, an unreachable gateway. */
  error: 1,
  /** Unknown command or flag, a missing or malformed argument, missing configuration. */
  usage: 2,
  /** The database, record, run, conversation or schedule does not exist. */
  notFound: 3,
  /** Refused: the record's state does not allow it, the schema needs a migration, the token was refused. */
  refused: 4,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export const EXIT_CODES_HELP =
  "Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 refused (state, schema or token).";

const REFUSALS: readonly SwitchboardErrorCode[] = [
  "input_invalid",
  "state_conflict",
  "version_conflict",
  "idempotency_conflict",
  "fence_lost",
  "conversation_purged",
  "schema_unsupported",
  "unauthorized",
];

export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof CliUsageError) return EXIT.usage;
  if (!isSwitchboardError(error)) return EXIT.error;
  if (error.code === "not_found") return EXIT.notFound;
  if (error.code === "config_invalid") return EXIT.usage;
  return REFUSALS.includes(error.code) ? EXIT.refused : EXIT.error;
}
