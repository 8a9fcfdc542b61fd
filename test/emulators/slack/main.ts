/**
 * Runs a Slack emulator as its own process for out-of-process tests:
 *   bun test/emulators/slack/main.ts [--port N] [--redelivery-delay-ms N]
 * Prints one JSON line {url, apiUrl, botToken, appToken, identity} on stdout, then serves until
 * SIGTERM/SIGINT. Drive it with SlackEmulatorControl (control-client.ts).
 */
import { parseArgs } from "node:util";
import { startSlackEmulator } from "./emulator.ts";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    "redelivery-delay-ms": { type: "string", default: "3000" },
    "bot-token": { type: "string" },
    "app-token": { type: "string" },
  },
});

const emulator = startSlackEmulator({
  port: Number(values.port),
  redeliveryDelayMs: Number(values["redelivery-delay-ms"]),
  botToken: values["bot-token"],
  appToken: values["app-token"],
});

console.log(
  JSON.stringify({
    url: emulator.url,
    apiUrl: emulator.apiUrl,
    botToken: emulator.botToken,
    appToken: emulator.appToken,
    identity: emulator.identity,
  }),
);

const shutdown = () => {
  void emulator.close().then(() => process.exit(0));
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
