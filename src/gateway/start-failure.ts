import { SwitchboardError } from "../errors.ts";
import type { GatewayConfig } from "./config/index.ts";

/**
 * A start-up failure that a setting explains, as the configuration error naming that setting:
 * a host this machine cannot listen on, a port another program holds, a SQLite file that cannot
 * be opened. Anything else is not the configuration's fault: null.
 */
export function explainStartFailure(error: unknown, config: GatewayConfig): SwitchboardError | null {
  const failure = error as NodeJS.ErrnoException;
  const { host, port } = config.http;
  if (failure?.syscall === "listen") {
    if (failure.code === "EADDRINUSE" && port !== 0)
      return configError(
        "SWITCHBOARD_HTTP_PORT",
        `${port} is already in use on ${host}: another program (or another switchboard) listens there; stop it or pick another port`,
        "SWITCHBOARD_HTTP_PORT=8788",
        error,
      );
    if (failure.code === "EACCES")
      return configError(
        "SWITCHBOARD_HTTP_PORT",
        `${port} needs privileges this process does not have; use a port above 1023`,
        "SWITCHBOARD_HTTP_PORT=8787",
        error,
      );
    return configError(
      "SWITCHBOARD_HTTP_HOST",
      `"${host}" is not an address of this machine, or a name that resolves to one`,
      "SWITCHBOARD_HTTP_HOST=127.0.0.1 (this machine only) or 0.0.0.0 (every interface)",
      error,
    );
  }
  if (failure?.code === "SQLITE_CANTOPEN" && config.database.engine === "sqlite")
    return configError(
      "SWITCHBOARD_DB",
      `names ${config.database.path}, which cannot be opened as a database file (${failure.message}); it must be a file (or not exist yet) in a directory this process can write`,
      "SWITCHBOARD_DB=./data/switchboard.sqlite",
      error,
    );
  return null;
}

function configError(variable: string, problem: string, example: string, cause: unknown): SwitchboardError {
  return new SwitchboardError("config_invalid", `${variable} ${problem}. Example: ${example}`, {
    details: { variable },
    cause,
  });
}
