import { startDiscordEmulator } from "./emulator.ts";

/**
 * Runs the emulator as its own process for out-of-process tests:
 *   bun test/emulators/discord/main.ts [--token T] [--heartbeat-ms N] [--channel-rate-limit]
 * Prints one JSON line `{ "apiUrl", "baseUrl", "controlUrl" }` once listening; SIGTERM stops it.
 */
const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args[index + 1];
};
const heartbeat = flag("--heartbeat-ms");
const token = flag("--token");

const emulator = startDiscordEmulator({
  ...(token === undefined ? {} : { token }),
  ...(heartbeat === undefined ? {} : { heartbeatIntervalMs: Number(heartbeat) }),
  ...(args.includes("--channel-rate-limit") ? { channelRateLimit: { limit: 5, windowMs: 5000 } } : {}),
});
console.log(
  JSON.stringify({
    apiUrl: emulator.apiUrl,
    baseUrl: emulator.baseUrl,
    controlUrl: `${emulator.baseUrl}/__control`,
  }),
);

const shutdown = async () => {
  await emulator.close();
  process.exit(0);
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
