import { describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { loadSecretBox, SecretBox } from "../../src/util/secret-box.ts";
import { tempDir } from "../support/runtime.ts";

const KEY = "k".repeat(40);
const errorOf = (f: () => unknown) => {
  try {
    f();
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error("expected an error");
};

describe("SecretBox", () => {
  const box = new SecretBox(KEY, { kind: "variable" });

  test("a sealed value opens under the same key and context, and holds no plaintext", () => {
    const sealed = box.seal("xoxb-secret-token", "T0ACME");
    expect(sealed).toStartWith(`sb1:${box.keyId}:`);
    expect(sealed).not.toContain("xoxb");
    expect(box.open(sealed, "T0ACME", "the installation")).toBe("xoxb-secret-token");
  });

  test("another context or an altered value fails the integrity check", () => {
    const sealed = box.seal("xoxb-secret-token", "T0ACME");
    expect(errorOf(() => box.open(sealed, "T0GLOBEX", "it")).message).toContain("failed its integrity check");
    const altered = `${sealed.slice(0, -2)}${sealed.endsWith("A") ? "B" : "A"}${sealed.slice(-1)}`;
    expect(errorOf(() => box.open(altered, "T0ACME", "it")).code).toBe("state_conflict");
  });

  test("a value sealed under another key is refused naming SWITCHBOARD_SECRET_KEY", () => {
    const other = new SecretBox("o".repeat(40), { kind: "variable" });
    const error = errorOf(() => box.open(other.seal("x", "c"), "c", "the installation"));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toContain(`sealed with key ${other.keyId}`);
    expect(error.message).toContain("SWITCHBOARD_SECRET_KEY");
  });

  test("a key shorter than 32 characters is refused", () => {
    expect(errorOf(() => new SecretBox("short", { kind: "variable" })).code).toBe("config_invalid");
  });
});

describe("loadSecretBox", () => {
  test("without the variable, a key file is created once (0600) and read back after", () => {
    const dir = tempDir("switchboard-secret-box-");
    try {
      const file = join(dir.path, "db.sqlite.key");
      const first = loadSecretBox(undefined, file);
      expect(first.source).toEqual({ kind: "file", path: file, created: true });
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const again = loadSecretBox(undefined, file);
      expect(again.source).toEqual({ kind: "file", path: file, created: false });
      expect(again.open(first.seal("v", "c"), "c", "it")).toBe("v");
    } finally {
      dir.cleanup();
    }
  });

  test("the variable wins over the file; with no file allowed (PostgreSQL) it is required", () => {
    expect(loadSecretBox(KEY, "/nonexistent/key").source).toEqual({ kind: "variable" });
    const error = errorOf(() => loadSecretBox(undefined, null));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toContain("required with PostgreSQL");
  });
});
