/*
 * A stdio MCP server runs under a small sh watchdog: the server gets its own session (so the whole
 * tree it starts is one process group), and the watchdog kills that group when it is told to stop
 * or when the gateway is gone (its parent changed: the gateway died, even by SIGKILL). The
 * server's stdin and stdout stay the pipes the MCP client speaks over. Linux: reads /proc.
 */

const WATCHDOG = `
gateway=$1; shift
exec 3<&0
setsid "$@" 0<&3 3<&- &
server=$!
exec 3<&-
stop() { kill -TERM -"$server" 2>/dev/null; sleep 1; kill -KILL -"$server" 2>/dev/null; exit 0; }
trap stop TERM INT HUP
ppid() { read -r stat < "/proc/$$/stat" && set -- $stat && echo "$4"; }
state() { read -r stat < "/proc/$1/stat" 2>/dev/null && set -- $stat && echo "$3"; }
while [ "$(ppid)" = "$gateway" ]; do
  status=$(state "$server")
  if [ -z "$status" ] || [ "$status" = Z ]; then wait "$server"; exit $?; fi
  sleep 0.5 & wait $!
done
stop
`;

/** The command and arguments that run `command args` under the watchdog, for this process. */
export function supervised(command: string, args: readonly string[]): { command: string; args: string[] } {
  return {
    command: "/bin/sh",
    args: ["-c", WATCHDOG, "switchboard-mcp", String(process.pid), command, ...args],
  };
}
