/**
 * The command line itself is wrong (unknown command or flag, missing argument). Only the CLI
 * throws it; it becomes exit code 2 with the message and the command's usage.
 */
export class CliUsageError extends Error {
  /** The help of the command (or group) the user was typing, printed after the message. */
  readonly usage: string;

  constructor(message: string, usage: string) {
    super(message);
    this.name = "CliUsageError";
    this.usage = usage;
  }
}
