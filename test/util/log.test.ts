import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/util/log.ts";

function capture(options: Parameters<typeof createLogger>[0] = {}) {
  const lines: string[] = [];
  const logger = createLogger({ ...options, write: (line) => lines.push(line) });
  return { logger, lines };
}

describe("createLogger", () => {
  test("json (the default): one object per line, with the level, the event and the fields", () => {
    const { logger, lines } = capture();
    logger.info("outbox.delivered", { record: "obx_1", attempts: 2 });
    const record = JSON.parse(lines[0]!);
    expect(record).toMatchObject({ level: "info", event: "outbox.delivered", record: "obx_1", attempts: 2 });
    expect(Number.isNaN(Date.parse(record.time))).toBe(false);
  });

  test("pretty: time, level, event and key=value on one line; the hint on its own line below", () => {
    const { logger, lines } = capture({ format: "pretty" });
    logger.warn("gateway.offline_model", {
      model: "offline",
      detail: "two words",
      hint: "set OPENROUTER_API_KEY (or SWITCHBOARD_MODEL) to connect a real model",
    });
    const [head, hint] = lines[0]!.split("\n");
    expect(head).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} WARN {2}gateway\.offline_model model=offline detail="two words"$/,
    );
    expect(hint).toBe(
      `${" ".repeat(19)}→ set OPENROUTER_API_KEY (or SWITCHBOARD_MODEL) to connect a real model`,
    );
    expect(lines[0]).not.toContain("\x1b[");
  });

  test("pretty with colour paints the level and the hint; json never has colour codes", () => {
    const pretty = capture({ format: "pretty", color: true });
    pretty.logger.error("store.failed", { hint: "check the disk" });
    expect(pretty.lines[0]).toContain("\x1b[31mERROR\x1b[0m");
    expect(pretty.lines[0]).toContain("\x1b[1;32m→ check the disk\x1b[0m");
    const json = capture({ color: true });
    json.logger.error("store.failed", { hint: "check the disk" });
    expect(json.lines[0]).not.toContain("\x1b[");
  });

  test("secrets are redacted in both formats, errors show their name and message, the level filters", () => {
    for (const format of ["json", "pretty"] as const) {
      const { logger, lines } = capture({ format, secrets: ["xoxb-secret-token"], level: "info" });
      logger.debug("dropped", {});
      logger.info("slack.call", { url: "https://x/?t=xoxb-secret-token", error: new TypeError("boom") });
      expect(lines).toHaveLength(1);
      expect(lines[0]).not.toContain("xoxb-secret-token");
      expect(lines[0]).toContain("[redacted]");
      expect(lines[0]).toContain("boom");
    }
  });
});
