import { describe, expect, test } from "bun:test";
import { isSwitchboardError } from "../../src/errors.ts";
import {
  type Binding,
  type BindingFacts,
  type BindingMatch,
  bindingMatches,
  bindingProblems,
  firstMatchingBinding,
} from "../../src/gateway/config/bindings.ts";
import { explainSettings } from "../../src/gateway/config/conversation-settings.ts";
import { createModelChoices, registryModelsOf } from "../../src/gateway/model-choice.ts";
import { createModelRegistry } from "../../src/models/registry.ts";
import type { RuntimeStore } from "../../src/runtime/store.ts";
import { systemClock } from "../../src/util/clock.ts";
import { configWith, fileConfig } from "./support/config.ts";

const telegramDm: BindingFacts = {
  channel: "telegram",
  account: "default",
  surface: "dm",
  user: "7",
  chat: "7",
};
const slackThread: BindingFacts = {
  channel: "slack",
  account: "default",
  surface: "thread",
  user: "U1",
  chat: "C0SALES",
  team: "T0ACME",
};
const discordGroup: BindingFacts = {
  channel: "discord",
  account: "default",
  surface: "group",
  user: "99",
  chat: "555",
  guild: "123",
  roles: ["456", "789"],
};

describe("bindingMatches: every key of the match must hold", () => {
  const table: Array<[string, BindingMatch, BindingFacts, boolean]> = [
    ["an empty match holds everywhere", {}, telegramDm, true],
    ["the channel", { channel: "telegram" }, telegramDm, true],
    ["another channel", { channel: "slack" }, telegramDm, false],
    ["the account", { channel: "telegram", account: "default" }, telegramDm, true],
    ["another account", { account: "support" }, telegramDm, false],
    ["the chat", { chat: "7" }, telegramDm, true],
    ["another chat", { chat: "8" }, telegramDm, false],
    ["the user", { user: "7" }, telegramDm, true],
    ["another user", { user: "70" }, telegramDm, false],
    ["the surface", { surface: "dm" }, telegramDm, true],
    ["another surface", { surface: "group" }, telegramDm, false],
    [
      "team and chat of a Slack thread",
      { channel: "slack", team: "T0ACME", chat: "C0SALES" },
      slackThread,
      true,
    ],
    ["another workspace", { channel: "slack", team: "T0OTHER", chat: "C0SALES" }, slackThread, false],
    ["a team where the platform has none", { team: "T0ACME" }, telegramDm, false],
    [
      "guild and one of the member's roles",
      { channel: "discord", guild: "123", role: "789" },
      discordGroup,
      true,
    ],
    ["a role the member lacks", { channel: "discord", guild: "123", role: "111" }, discordGroup, false],
    ["a role where no roles are known", { role: "456" }, telegramDm, false],
    ["another guild", { guild: "124" }, discordGroup, false],
    [
      "all keys at once",
      {
        channel: "discord",
        account: "default",
        guild: "123",
        chat: "555",
        user: "99",
        role: "456",
        surface: "group",
      },
      discordGroup,
      true,
    ],
    [
      "all keys but one wrong",
      {
        channel: "discord",
        account: "default",
        guild: "123",
        chat: "555",
        user: "98",
        role: "456",
        surface: "group",
      },
      discordGroup,
      false,
    ],
  ];
  for (const [name, match, facts, expected] of table) {
    test(name, () => expect(bindingMatches(match, facts)).toBe(expected));
  }
});

test("the first binding that matches wins; none: null", () => {
  const bindings = [
    { match: { channel: "slack" as const, chat: "C0SALES" } },
    { match: { channel: "telegram" as const, chat: "7" } },
    { match: { channel: "telegram" as const } },
  ];
  expect(firstMatchingBinding(bindings, telegramDm)).toBe(1);
  expect(firstMatchingBinding(bindings, { ...telegramDm, chat: "8" })).toBe(2);
  expect(firstMatchingBinding(bindings, slackThread)).toBe(0);
  expect(firstMatchingBinding(bindings, discordGroup)).toBeNull();
});

describe("bindingProblems", () => {
  const onlyDefault = () => ["default"];

  test("an account the channel does not have; the known accounts are an input", () => {
    const bindings = [{ match: { channel: "telegram" as const, account: "support" } }];
    expect(bindingProblems(bindings, onlyDefault)).toEqual([
      {
        index: 0,
        key: "account",
        message: '"support" is not an account of telegram; accounts: default',
      },
    ]);
    const withSupport = (channel: string) => (channel === "telegram" ? ["default", "support"] : ["default"]);
    expect(bindingProblems(bindings, withSupport)).toEqual([]);
    // Without a channel, any channel's account will do.
    expect(bindingProblems([{ match: { account: "support" } }], withSupport)).toEqual([]);
    expect(bindingProblems([{ match: { channel: "slack", account: "support" } }], withSupport)[0]?.key).toBe(
      "account",
    );
  });

  test("team, guild and role need their channel", () => {
    const problems = bindingProblems(
      [
        { match: { team: "T1" } },
        { match: { channel: "telegram", guild: "1", role: "2" } },
        { match: { channel: "discord", role: "2" } },
      ],
      onlyDefault,
    );
    expect(problems.map((p) => `${p.index}.${p.key}`)).toEqual(["0.team", "1.guild", "1.role"]);
  });

  test("a binding that an earlier one always matches first is shadowed; a narrower earlier one is not", () => {
    const shadowed = (matches: BindingMatch[]) =>
      bindingProblems(
        matches.map((match) => ({ match })),
        onlyDefault,
      )
        .filter((p) => p.key === "match")
        .map((p) => p.index);
    expect(shadowed([{ channel: "telegram" }, { channel: "telegram", chat: "42" }])).toEqual([1]);
    expect(shadowed([{}, { user: "1" }])).toEqual([1]);
    expect(shadowed([{ channel: "telegram" }, { channel: "telegram" }])).toEqual([1]);
    expect(shadowed([{ channel: "telegram", chat: "42" }, { channel: "telegram" }])).toEqual([]);
    expect(
      shadowed([
        { channel: "discord", role: "1" },
        { channel: "discord", role: "2" },
      ]),
    ).toEqual([]);
    expect(shadowed([{ chat: "1" }, { chat: "2" }, { user: "3", chat: "2" }])).toEqual([2]);
  });
});

describe("explainSettings: the binding's settings over the surface's, and what set each", () => {
  const file = fileConfig({
    surfaces: {
      "*:*": { approvers: ["admin"] },
      "telegram:dm": { inputPolicy: "queue", instructions: "Surface words." },
    },
    models: {
      smart: "openrouter:anthropic/claude-sonnet-4",
      default: { "*:group": "smart" },
    },
    bindings: [
      {
        match: { channel: "telegram", chat: "7" },
        instructions: "Binding words.",
        tools: ["web"],
        model: "openai-compatible:support",
        messagesPerMinute: 5,
      },
      { match: { channel: "discord", role: "456" }, models: { fast: "openrouter:openai/gpt-4o-mini" } },
    ],
  });

  test("a matching binding replaces what it names; the rest comes from the surfaces and defaults", () => {
    const { binding, settings, sources } = explainSettings(file, telegramDm);
    expect(binding).toBe(0);
    expect(settings).toMatchObject({
      inputPolicy: "queue",
      delivery: "stream",
      instructions: "Binding words.",
      tools: ["web"],
      approvers: ["admin"],
      messagesPerMinute: 5,
      model: "openai-compatible:support",
      models: { smart: "openrouter:anthropic/claude-sonnet-4" },
    });
    expect(sources).toMatchObject({
      inputPolicy: "surfaces.telegram:dm",
      delivery: "default",
      instructions: "bindings.0",
      tools: "bindings.0",
      approvers: "surfaces.*:*",
      messagesPerMinute: "bindings.0",
      model: "bindings.0",
      models: "models",
    });
  });

  test("without a matching binding the surfaces decide, as before bindings", () => {
    const { binding, settings, sources } = explainSettings(file, { ...telegramDm, chat: "8" });
    expect(binding).toBeNull();
    expect(settings.instructions).toBe("Surface words.");
    expect(settings.tools).toBeUndefined();
    expect(settings.model).toBeNull();
    expect(sources.instructions).toBe("surfaces.telegram:dm");
    expect(sources.model).toBe("default");
  });

  test("a binding's models are added to the file's; the surface's default model stays", () => {
    const { binding, settings, sources } = explainSettings(file, discordGroup);
    expect(binding).toBe(1);
    expect(settings.models).toEqual({
      smart: "openrouter:anthropic/claude-sonnet-4",
      fast: "openrouter:openai/gpt-4o-mini",
    });
    expect(sources.models).toBe("models + bindings.1");
    expect(settings.model).toBe("smart");
    expect(sources.model).toBe("models.default.*:group");
    expect(settings.inputPolicy).toBe("queue");
  });
});

describe("the file's bindings are checked on reading", () => {
  const problemOf = (bindings: unknown[], more: Record<string, unknown> = {}) => {
    try {
      configWith({}, { version: 1, bindings, ...more });
      return null;
    } catch (error) {
      expect(isSwitchboardError(error, "config_invalid")).toBe(true);
      return (error as Error).message;
    }
  };

  test("a model that is neither a configured name nor a model spec", () => {
    expect(problemOf([{ match: { channel: "telegram" }, model: "genius" }])).toMatch(
      /bindings\.0\.model: "genius" is not one of the models named in "models" or this binding's "models" \(none\)/,
    );
    expect(problemOf([{ match: { channel: "telegram" }, model: "skynet:v1" }])).toMatch(
      /bindings\.0\.model: "skynet:v1" is not a model spec/,
    );
    expect(
      problemOf([{ match: { channel: "telegram" }, model: "fast", models: { fast: "offline" } }]),
    ).toBeNull();
  });

  test("a model name that means another model elsewhere", () => {
    expect(
      problemOf([{ match: { channel: "telegram" }, models: { smart: "openrouter:openai/gpt-4o" } }], {
        models: { smart: "openrouter:anthropic/claude-sonnet-4" },
      }),
    ).toMatch(
      /bindings\.0\.models\.smart: "smart" is already the model openrouter:anthropic\/claude-sonnet-4/,
    );
  });

  test("a tool set that does not exist", () => {
    expect(problemOf([{ match: { channel: "telegram" }, tools: ["webb"] }])).toMatch(
      /bindings\.0\.tools\.0: "webb" is not a tool set \(did you mean "web"\?\)/,
    );
  });

  test("a valid list is kept in order", () => {
    const bindings: Binding[] = fileConfig({
      bindings: [
        { match: { channel: "telegram", chat: "7" }, inputPolicy: "interrupt" },
        { match: { channel: "telegram" }, delivery: "terminal" },
      ],
    }).bindings;
    expect(bindings.map((b) => b.match)).toEqual([
      { channel: "telegram", chat: "7" },
      { channel: "telegram" },
    ]);
  });
});

describe("models where a binding matches", () => {
  const file = fileConfig({
    models: { smart: "openai-compatible:smart", default: "smart" },
    bindings: [
      { match: { channel: "telegram", chat: "7" }, model: "openai-compatible:support" },
      { match: { channel: "discord" }, models: { fast: "openai-compatible:fast" }, model: "fast" },
    ],
  });
  const registry = createModelRegistry(
    { SWITCHBOARD_MODEL: "openai-compatible:main", OPENAI_COMPATIBLE_BASE_URL: "http://127.0.0.1:1/v1" },
    { named: registryModelsOf(file) },
  );
  const stored = new Map<string, string>();
  const store = {
    loadConversationSettings: async (id: string) => (stored.has(id) ? { model: stored.get(id) } : {}),
    saveConversationSettings: async (id: string, settings: { model?: string }) => {
      if (settings.model === undefined) stored.delete(id);
      else stored.set(id, settings.model);
    },
  } as unknown as RuntimeStore;
  const models = createModelChoices({ registry, file, store, clock: systemClock });
  const specOf = (name: string | null) => models.chain(name)[0]!.spec;

  test("a binding's spec is the bound conversation's default; other conversations keep the file's", async () => {
    expect(await models.current("c1", telegramDm)).toEqual({
      name: "openai-compatible:support",
      chosen: false,
    });
    expect(specOf("openai-compatible:support")).toBe("openai-compatible:support");
    expect(await models.current("c2", { ...telegramDm, chat: "8" })).toEqual({
      name: "smart",
      chosen: false,
    });
    expect(specOf("smart")).toBe("openai-compatible:smart");
  });

  test("a binding's names are pickable only where it matches; its model may be one of them", async () => {
    expect(models.names).toEqual(["smart", "fast"]);
    expect(models.namesFor(telegramDm)).toEqual(["smart"]);
    expect(models.namesFor(discordGroup)).toEqual(["smart", "fast"]);
    expect(await models.current("c3", discordGroup)).toEqual({ name: "fast", chosen: false });
    expect(await models.choose("c1", "fast", telegramDm)).toBe(false);
    expect(await models.choose("c3", "smart", discordGroup)).toBe(true);
    expect(await models.current("c3", discordGroup)).toEqual({ name: "smart", chosen: true });
    // A choice made where a name was pickable does not follow the conversation where it is not.
    expect(await models.choose("c1", "smart", telegramDm)).toBe(true);
    stored.set("c4", "fast");
    expect(await models.current("c4", telegramDm)).toEqual({
      name: "openai-compatible:support",
      chosen: false,
    });
  });
});
