/**
 * What an app token may touch: the pure decisions of api-caller.ts over bindings' `apps`, the
 * chat a send's target is in, and the start refusing an `apps` name no app token has.
 */
import { describe, expect, test } from "bun:test";
import { conversationKeyFor, ownerOfApp } from "../../channels/api/keys.ts";
import {
  type Binding,
  bindingProblems,
  describeBindingProblems,
  type MatchFacts,
} from "../../src/gateway/config/bindings.ts";
import { explainSettings } from "../../src/gateway/config/conversation-settings.ts";
import { describeSettings } from "../../src/gateway/config/explain.ts";
import {
  type ApiCaller,
  type ConversationBinding,
  maySendTo,
  mayUseConversation,
} from "../../src/gateway/http/api-caller.ts";
import { chatOfTarget } from "../../src/gateway/target-chat.ts";
import { configWith } from "./support/config.ts";

const crm: ApiCaller = { kind: "app", name: "crm" };
const alerts: ApiCaller = { kind: "app", name: "alerts" };
const operator: ApiCaller = { kind: "operator", name: null };
const APP_TOKENS = "crm=crm-token-0123456789abc,alerts=alerts-token-0123456789";

const bindings: Array<Pick<Binding, "match" | "apps">> = [
  { match: { channel: "telegram", chat: "100" }, apps: ["crm"] },
  { match: { channel: "telegram", account: "support", chat: "200" }, apps: ["crm", "alerts"] },
  { match: { channel: "telegram", chat: "300" } },
  { match: { channel: "slack", team: "T0ACME" }, apps: ["crm"] },
  { match: { channel: "discord", surface: "group" }, apps: ["crm"] },
  { match: { channel: "discord", chat: "555" }, apps: ["alerts"] },
];
const target = (channel: MatchFacts["channel"], chat: string, account = "default"): MatchFacts => ({
  channel,
  account,
  chat,
});

describe("maySendTo: the first binding matching the target must list the app", () => {
  const table: Array<[string, ApiCaller, MatchFacts, boolean, RegExp?]> = [
    ["an operator, anywhere", operator, target("telegram", "999"), true],
    ["the app a binding on the chat lists", crm, target("telegram", "100"), true],
    [
      "an app that binding does not list",
      alerts,
      target("telegram", "100"),
      false,
      /bindings\.0 \(match channel=telegram chat=100\) .*does not list alerts\. Add "alerts" to bindings\.0\.apps/,
    ],
    [
      "a chat no binding matches",
      crm,
      target("telegram", "999"),
      false,
      /no binding matches it\. Add a binding .*"chat": "999"\}, "apps": \["crm"\]/,
    ],
    ["the account the binding names", alerts, target("telegram", "200", "support"), true],
    [
      "another account than the binding names",
      alerts,
      target("telegram", "200"),
      false,
      /no binding matches/,
    ],
    [
      "a matching binding without apps",
      crm,
      target("telegram", "300"),
      false,
      /bindings\.2 .*does not list crm/,
    ],
    // A send's target has no team, surface, user or role: a match naming one never holds for it.
    ["a match naming team (absent for sends)", crm, target("slack", "C0SALES"), false, /no binding matches/],
    ["a match naming surface (absent for sends)", crm, target("discord", "555"), false, /does not list crm/],
    ["the next binding when the first needs an absent fact", alerts, target("discord", "555"), true],
    ["another channel", crm, target("whatsapp", "100"), false, /no binding matches/],
  ];
  for (const [name, caller, facts, allowed, reason] of table)
    test(name, () => {
      const decision = maySendTo(caller, bindings, facts);
      expect(decision.allowed).toBe(allowed);
      if (!decision.allowed && reason) expect(decision.reason).toMatch(reason);
    });

  test("no bindings at all: refused, saying which setting would allow it", () => {
    const decision = maySendTo(crm, [], target("telegram", "100"));
    expect(decision).toMatchObject({ allowed: false });
    expect(!decision.allowed && decision.reason).toContain('"apps": ["crm"]');
  });
});

describe("mayUseConversation: own api conversations, and platform ones a binding gives", () => {
  const own = conversationKeyFor(ownerOfApp("crm"), "ref-crm-1");
  const others = conversationKeyFor(ownerOfApp("alerts"), "ref-alerts-2");
  const operatorMade = conversationKeyFor("operator", "ref-operator-3");
  const telegramChat = "tg:123456:dm:100";
  const givesCrm: ConversationBinding = { channel: "telegram", apps: ["crm"] };
  const givesNone: ConversationBinding = { channel: "telegram", apps: [] };
  const table: Array<[string, ApiCaller, string | null, ConversationBinding | null, boolean]> = [
    ["an operator, any conversation", operator, telegramChat, null, true],
    ["an app, its own api conversation", crm, own, null, true],
    ["an app, another app's", crm, others, null, false],
    ["an app, an operator's", crm, operatorMade, null, false],
    ["an app, a conversation with no key", crm, null, null, false],
    ["an app, a platform conversation without binding", crm, telegramChat, null, false],
    ["an app, a platform conversation its binding lists it in", crm, telegramChat, givesCrm, true],
    ["an app, a platform conversation its binding does not list", alerts, telegramChat, givesCrm, false],
    ["an app, a platform conversation whose binding lists no apps", crm, telegramChat, givesNone, false],
    ["an app, a platform conversation after /new (no key), bound", crm, null, givesCrm, true],
    // An api conversation is its creator's alone, whatever a binding matching it says.
    ["an app, another app's api conversation a binding lists it in", crm, others, givesCrm, false],
    ["an app, an api conversation by its facts", crm, null, { channel: "api", apps: ["crm"] }, false],
  ];
  for (const [name, caller, key, bound, allowed] of table)
    test(name, () => expect(mayUseConversation(caller, key, bound)).toBe(allowed));
});

describe("chatOfTarget: the chat a send's target is in, as bindings name chats", () => {
  const table: Array<[MatchFacts["channel"], string, string]> = [
    ["telegram", "-1001234", "-1001234"],
    ["telegram", "-1001234:77", "-1001234"],
    ["slack", "C0SALES:1700000000.000100", "C0SALES"],
    ["matrix", "mx:!room:example.org/$root", "!room:example.org"],
    ["discord", "dc:123456789012345678", "123456789012345678"],
    ["whatsapp", "4915112345678", "4915112345678"],
    ["telegram", "not-a-target", "not-a-target"],
  ];
  for (const [channel, encoded, chat] of table)
    test(`${channel} ${encoded}`, () => expect(chatOfTarget(channel, encoded)).toBe(chat));
});

describe("a binding's apps", () => {
  const accounts = () => ["default"];

  test("a name no app token has is a problem at bindings.<i>.apps", () => {
    const problems = bindingProblems(
      [
        { match: { channel: "telegram", chat: "1" }, apps: ["crm"] },
        { match: { channel: "telegram", chat: "2" }, apps: ["crm", "billing"] },
      ],
      accounts,
      ["crm", "alerts"],
    );
    expect(describeBindingProblems(problems)).toBe(
      'bindings.1.apps: "billing" is not an app of SWITCHBOARD_APP_TOKENS; apps: crm, alerts',
    );
    expect(bindingProblems([{ match: {}, apps: ["crm"] }], accounts, [])[0]?.message).toContain("apps: none");
    expect(bindingProblems([{ match: {}, apps: ["crm"] }], accounts, ["crm"])).toEqual([]);
  });

  test("the start refuses it (config_invalid), naming the binding's index and key", () => {
    const start = (apps: string[]) =>
      configWith(
        { SWITCHBOARD_APP_TOKENS: APP_TOKENS },
        { version: 1, bindings: [{ match: { channel: "telegram" }, apps }] },
      );
    expect(() => start(["billing"])).toThrow(
      /bindings\.0\.apps: "billing" is not an app of SWITCHBOARD_APP_TOKENS; apps: crm, alerts/,
    );
    expect(() => configWith({}, { version: 1, bindings: [{ match: {}, apps: ["crm"] }] })).toThrow(
      /bindings\.0\.apps: "crm" is not an app of SWITCHBOARD_APP_TOKENS; apps: none/,
    );
    expect(start(["crm"]).file.bindings[0]?.apps).toEqual(["crm"]);
  });

  test("config explain shows them with the binding that set them, and none elsewhere", () => {
    const file = configWith(
      { SWITCHBOARD_APP_TOKENS: APP_TOKENS },
      { version: 1, bindings: [{ match: { channel: "telegram", chat: "100" }, apps: ["crm", "alerts"] }] },
    ).file;
    const facts = { channel: "telegram", account: "default", surface: "group", chat: "100" } as const;
    expect(explainSettings(file, facts)).toMatchObject({
      binding: 0,
      settings: { apps: ["crm", "alerts"] },
      sources: { apps: "bindings.0" },
    });
    const rows = (chat: string) =>
      describeSettings(file, { ...facts, chat }, "/agent", () => ["default"]).rows;
    expect(rows("100").find((row) => row.setting === "apps")).toEqual({
      setting: "apps",
      value: "crm, alerts",
      source: "bindings.0",
    });
    expect(rows("999").find((row) => row.setting === "apps")).toEqual({
      setting: "apps",
      value: "none",
      source: "default",
    });
  });
});
