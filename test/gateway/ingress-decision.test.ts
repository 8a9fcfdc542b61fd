import { describe, expect, test } from "bun:test";
import type { InboundMessage } from "../../channels/types.ts";
import { WEB_ADMISSION } from "../../channels/web/index.ts";
import type { AllowList } from "../../src/gateway/config/index.ts";
import {
  decideIngress,
  type IngressRules,
  MAX_INPUT_CHARS,
  needsGrant,
} from "../../src/gateway/ingress-decision.ts";
import { fileConfig } from "./support/config.ts";

const ids = (...values: string[]): AllowList => ({ kind: "ids", ids: new Set(values) });

function message(overrides: Partial<InboundMessage> = {}): InboundMessage {
  return {
    channel: "telegram",
    account: "bot1",
    updateKey: "100",
    principal: { id: "alice", name: "Alice", isBot: false },
    conversationKey: "tg:dm:1",
    replyTarget: "1",
    surface: "dm",
    text: "hello",
    messageId: "55",
    addressedToBot: false,
    attachments: [],
    receivedAtMs: 1_700_000_000_000,
    ...overrides,
  };
}

function rules(overrides: Partial<IngressRules> = {}): IngressRules {
  return {
    file: fileConfig(),
    allowLists: { telegram: ids("alice"), discord: { kind: "everyone" }, slack: ids() },
    matchCommand: (text) => /^\/(stop|status)\b/.exec(text)?.[1] ?? null,
    ...overrides,
  };
}

describe("decideIngress: who may reach the model", () => {
  test("a bot is ignored unless the config allows bots", () => {
    const fromBot = message({ principal: { id: "alice", isBot: true } });
    expect(decideIngress(fromBot, rules())).toEqual({ kind: "ignore", reason: "from a bot" });
    const allowing = rules({ file: fileConfig({ allowBots: true }) });
    expect(decideIngress(fromBot, allowing).kind).toBe("admit");
  });

  test("with pairing, a stranger in a DM gets a code, elsewhere nothing; a stored grant admits", () => {
    const pairing: AllowList = { kind: "ids", ids: new Set(["alice"]), pairing: true };
    const withPairing = (granted?: boolean) =>
      rules({ allowLists: { telegram: pairing }, ...(granted === undefined ? {} : { granted }) });
    const stranger = message({ principal: { id: "mallory", isBot: false } });
    expect(decideIngress(stranger, withPairing())).toEqual({ kind: "pair" });
    expect(decideIngress({ ...stranger, surface: "group", addressedToBot: true }, withPairing())).toEqual({
      kind: "ignore",
      reason: "user not allowed",
    });
    expect(decideIngress(stranger, withPairing(true)).kind).toBe("admit");
    expect(decideIngress(message(), withPairing()).kind).toBe("admit");
    // Without pairing in the list, neither a code nor a grant lets a stranger in.
    expect(decideIngress(stranger, rules())).toEqual({ kind: "ignore", reason: "user not allowed" });
    expect(decideIngress(stranger, rules({ granted: true }))).toEqual({
      kind: "ignore",
      reason: "user not allowed",
    });
    expect(needsGrant(pairing, "mallory")).toBe(true);
    expect(needsGrant(pairing, "alice")).toBe(false);
    expect(needsGrant(ids("alice"), "mallory")).toBe(false);
  });

  test("the channel's allowlist decides: listed ids, everyone, nobody, and no list at all", () => {
    expect(decideIngress(message(), rules()).kind).toBe("admit");
    expect(decideIngress(message({ principal: { id: "mallory", isBot: false } }), rules())).toEqual({
      kind: "ignore",
      reason: "user not allowed",
    });
    expect(
      decideIngress(message({ channel: "discord", principal: { id: "x", isBot: false } }), rules()).kind,
    ).toBe("admit");
    expect(decideIngress(message({ channel: "slack" }), rules())).toEqual({
      kind: "ignore",
      reason: "user not allowed",
    });
    expect(decideIngress(message(), rules({ allowLists: {} }))).toEqual({
      kind: "ignore",
      reason: "user not allowed",
    });
  });

  test("a channel that controls access itself (the web chat) has no allowlist; others all do", () => {
    const web = message({ channel: "web", principal: { id: "anyone", isBot: false } });
    expect(decideIngress(web, rules({ allowLists: {}, admission: WEB_ADMISSION })).kind).toBe("admit");
    expect(decideIngress(web, rules({ allowLists: {} }))).toEqual({
      kind: "ignore",
      reason: "user not allowed",
    });
  });

  test("the bot check comes before the allowlist", () => {
    const botOffList = message({ principal: { id: "mallory", isBot: true } });
    expect(decideIngress(botOffList, rules())).toEqual({ kind: "ignore", reason: "from a bot" });
  });
});

describe("decideIngress: mention gating per surface", () => {
  test("groups and threads need a mention by default; DMs never do", () => {
    for (const surface of ["group", "thread"] as const) {
      expect(decideIngress(message({ surface }), rules())).toEqual({
        kind: "ignore",
        reason: "not addressed to the bot",
      });
      expect(decideIngress(message({ surface, addressedToBot: true }), rules()).kind).toBe("admit");
    }
    expect(decideIngress(message({ surface: "dm", addressedToBot: false }), rules()).kind).toBe("admit");
  });

  test("a surface override turns the mention requirement off, for that channel only", () => {
    const file = fileConfig({ surfaces: { "telegram:group": { requireMention: false } } });
    expect(decideIngress(message({ surface: "group" }), rules({ file })).kind).toBe("admit");
    const discordGroup = message({ channel: "discord", surface: "group" });
    expect(decideIngress(discordGroup, rules({ file })).kind).toBe("ignore");
  });

  test("an unaddressed group command is ignored like any other unaddressed message", () => {
    expect(decideIngress(message({ surface: "group", text: "/stop" }), rules())).toEqual({
      kind: "ignore",
      reason: "not addressed to the bot",
    });
  });
});

describe("decideIngress: commands, size and emptiness", () => {
  test("a command is recognised on the trimmed text and never admitted", () => {
    expect(decideIngress(message({ text: "  /status  " }), rules())).toEqual({
      kind: "command",
      name: "status",
    });
  });

  test("text over the limit is oversized (after trimming); at the limit it is admitted", () => {
    const over = message({ text: "x".repeat(MAX_INPUT_CHARS + 1) });
    expect(decideIngress(over, rules())).toEqual({
      kind: "oversized",
      chars: MAX_INPUT_CHARS + 1,
      limitChars: MAX_INPUT_CHARS,
    });
    const padded = message({ text: `  ${"x".repeat(MAX_INPUT_CHARS)}  ` });
    expect(decideIngress(padded, rules()).kind).toBe("admit");
  });

  test("blank text without attachments is empty; an attachment alone is admitted as a file part", () => {
    expect(decideIngress(message({ text: "   " }), rules())).toEqual({ kind: "ignore", reason: "empty" });
    // Zero-width space, joiner, word joiner, byte-order mark, soft hyphen: nothing to see either.
    const invisible = "\u200b\u200d \u2060\ufeff\u00ad\n";
    expect(decideIngress(message({ text: invisible }), rules())).toEqual({ kind: "ignore", reason: "empty" });
    const visible = decideIngress(message({ text: "\u200bhi" }), rules());
    expect(visible.kind).toBe("admit");
    const photo = message({
      text: " ",
      attachments: [{ kind: "photo", ref: "file-1", mediaType: "image/jpeg", sizeBytes: 0 }],
    });
    const decision = decideIngress(photo, rules());
    if (decision.kind !== "admit") throw new Error(`expected admit, got ${decision.kind}`);
    expect(decision.parts).toEqual([
      { type: "file", ref: "file-1", kind: "photo", mediaType: "image/jpeg", sizeBytes: 0 },
    ]);
  });
});

describe("decideIngress: what an admitted message carries", () => {
  test("trimmed text then files, and the context its answer is delivered by", () => {
    const decision = decideIngress(
      message({
        text: "  look at this  ",
        attachments: [{ kind: "file", ref: "doc-9", name: "report.pdf" }],
      }),
      rules(),
    );
    if (decision.kind !== "admit") throw new Error(`expected admit, got ${decision.kind}`);
    expect(decision.parts).toEqual([
      { type: "text", text: "look at this" },
      { type: "file", ref: "doc-9", kind: "file", name: "report.pdf" },
    ]);
    expect(decision.context).toEqual({
      channel: "telegram",
      account: "bot1",
      target: "1",
      replyTo: "55",
      surface: "dm",
      delivery: "stream",
      conversationKey: "tg:dm:1",
      principal: { id: "alice", name: "Alice" },
      origin: "user",
    });
    expect(decision.policy.inputPolicy).toBe("supersede");
  });

  test("the surface policy picks delivery, native streaming and the input policy", () => {
    const file = fileConfig({
      surfaces: {
        "*:thread": { delivery: "stream" },
        "slack:thread": { nativeStreaming: true, inputPolicy: "inject" },
      },
    });
    const thread = message({
      channel: "slack",
      surface: "thread",
      addressedToBot: true,
      messageId: undefined,
      principal: { id: "U1", isBot: false },
    });
    const decision = decideIngress(thread, rules({ file, allowLists: { slack: ids("U1") } }));
    if (decision.kind !== "admit") throw new Error(`expected admit, got ${decision.kind}`);
    expect(decision.context).toMatchObject({ delivery: "stream", nativeStreaming: true, surface: "thread" });
    expect(decision.context).not.toHaveProperty("replyTo");
    expect(decision.context.principal).toEqual({ id: "U1" });
    expect(decision.policy.inputPolicy).toBe("inject");
  });
});
