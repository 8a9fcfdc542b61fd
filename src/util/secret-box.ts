/**
 * Secrets sealed at rest (Slack installations' tokens): AES-256-GCM under a key from
 * SWITCHBOARD_SECRET_KEY, or from a key file generated once beside the SQLite database (mode 0600).
 * A sealed value names its key by a short id, so a value sealed under another key is refused with
 * an error that says which variable to set, instead of GCM's bare "unable to authenticate".
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { SwitchboardError } from "../errors.ts";

export const SECRET_KEY_VARIABLE = "SWITCHBOARD_SECRET_KEY";
const FORMAT = "sb1";
const MIN_KEY_CHARS = 32;

/** Where the key came from, for errors and logs (never the key). */
export type KeySource = { kind: "variable" } | { kind: "file"; path: string; created: boolean };

export class SecretBox {
  readonly #key: Buffer;
  /** 8 hex characters naming the key; stored with every sealed value. */
  readonly keyId: string;
  readonly source: KeySource;

  constructor(secret: string, source: KeySource) {
    if (secret.length < MIN_KEY_CHARS)
      throw new SwitchboardError(
        "config_invalid",
        `${describeSource(source)} is shorter than ${MIN_KEY_CHARS} characters. Example: ${SECRET_KEY_VARIABLE}=$(openssl rand -hex 32)`,
        { details: { variable: SECRET_KEY_VARIABLE } },
      );
    this.#key = createHash("sha256").update(`switchboard secret box\0${secret}`).digest();
    this.keyId = createHash("sha256").update(this.#key).update("key id").digest("hex").slice(0, 8);
    this.source = source;
  }

  /** `sb1:<key id>:<iv>:<ciphertext and tag>`, base64url; `context` is authenticated (not stored). */
  seal(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    cipher.setAAD(Buffer.from(context, "utf8"));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return [FORMAT, this.keyId, iv.toString("base64url"), body.toString("base64url")].join(":");
  }

  /** The plaintext; throws `config_invalid` naming SWITCHBOARD_SECRET_KEY when the key is not the one it was sealed with. */
  open(sealed: string, context: string, what: string): string {
    const [format, keyId, iv, body] = sealed.split(":");
    if (format !== FORMAT || keyId === undefined || iv === undefined || body === undefined)
      throw new SwitchboardError(
        "state_conflict",
        `${what} is not a sealed value this version of switchboard reads`,
      );
    if (keyId !== this.keyId) throw this.#wrongKey(what, keyId);
    const bytes = Buffer.from(body, "base64url");
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(iv, "base64url"));
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(bytes.subarray(bytes.length - 16));
      return Buffer.concat([
        decipher.update(bytes.subarray(0, bytes.length - 16)),
        decipher.final(),
      ]).toString("utf8");
    } catch {
      throw new SwitchboardError(
        "state_conflict",
        `${what} failed its integrity check: the stored value was altered (its key id ${keyId} matches ${describeSource(this.source)})`,
      );
    }
  }

  #wrongKey(what: string, sealedWith: string): SwitchboardError {
    return new SwitchboardError(
      "config_invalid",
      `${what} was sealed with key ${sealedWith}, but ${describeSource(this.source)} is key ${this.keyId}. ` +
        `Set ${SECRET_KEY_VARIABLE} to the key it was sealed with (or put the key file back); if that key is lost, ` +
        "the tokens are too: reinstall the app in that workspace through /slack/install",
      { details: { variable: SECRET_KEY_VARIABLE, sealedWith, keyId: this.keyId } },
    );
  }
}

function describeSource(source: KeySource): string {
  return source.kind === "variable" ? SECRET_KEY_VARIABLE : `the key file ${source.path}`;
}

/**
 * The key from SWITCHBOARD_SECRET_KEY when set; else from `keyFile` (created with 32 random bytes,
 * mode 0600, on first use); null `keyFile` (PostgreSQL: several processes must share one key)
 * makes the variable required.
 */
export function loadSecretBox(variable: string | undefined, keyFile: string | null): SecretBox {
  if (variable !== undefined && variable.trim() !== "")
    return new SecretBox(variable.trim(), { kind: "variable" });
  if (keyFile === null)
    throw new SwitchboardError(
      "config_invalid",
      `${SECRET_KEY_VARIABLE} is required with PostgreSQL to seal Slack installations' tokens (every gateway on the database needs the same key). Example: ${SECRET_KEY_VARIABLE}=$(openssl rand -hex 32)`,
      { details: { variable: SECRET_KEY_VARIABLE } },
    );
  if (existsSync(keyFile)) {
    const secret = readFileSync(keyFile, "utf8").trim();
    return new SecretBox(secret, { kind: "file", path: keyFile, created: false });
  }
  const secret = randomBytes(32).toString("hex");
  // "wx": never overwrite a key another process wrote meanwhile.
  writeFileSync(keyFile, `${secret}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(keyFile, 0o600);
  return new SecretBox(secret, { kind: "file", path: keyFile, created: true });
}
