import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const slackDir = join(import.meta.dir, "../../../channels/slack");

function importsOf(file: string): string[] {
  const source = readFileSync(join(slackDir, file), "utf8");
  return [...source.matchAll(/from\s+"([^"]+)"/g)].map((match) => match[1] ?? "");
}

describe("channels/slack boundaries", () => {
  test("verify.ts and parse.ts import no Slack SDK, so webhooks stay checkable without Bolt", () => {
    for (const file of ["verify.ts", "parse.ts", "keys.ts"]) {
      const imports = importsOf(file);
      expect(imports.filter((name) => name.startsWith("@slack/"))).toEqual([]);
      expect(imports.filter((name) => name.includes("adapter") || name.includes("bolt"))).toEqual([]);
    }
  });

  test("Bolt is imported by named imports only (a default import differs between Bun and Node)", () => {
    for (const file of ["adapter.ts", "bolt-app.ts", "errors.ts", "send.ts"]) {
      const source = readFileSync(join(slackDir, file), "utf8");
      expect(source).not.toMatch(/import\s+[A-Za-z_$][\w$]*\s*(,|from)\s*[{"]?.*@slack\/bolt/);
    }
  });
});
