/** SWITCHBOARD_APP_TOKENS: name=token pairs, refused with the variable named, each token a secret. */
import { expect, test } from "bun:test";
import { loadConfig } from "../../src/gateway/config/index.ts";
import { createLogger } from "../../src/util/log.ts";

const CRM = "crm-token-0123456789abc";
const ALERTS = "alerts-token-0123456789";

test("name=token pairs become the apps, and the api channel is configured", () => {
  const config = loadConfig({ SWITCHBOARD_APP_TOKENS: `crm=${CRM}, alerts=${ALERTS}` });
  expect(config.appTokens).toEqual([
    { name: "crm", token: CRM },
    { name: "alerts", token: ALERTS },
  ]);
  expect(Object.keys(config.channels)).toEqual(["api"]);
  const lines: string[] = [];
  createLogger({ secrets: config.secrets, write: (line) => lines.push(line) }).info("probe", {
    header: `Bearer ${CRM}`,
    other: ALERTS,
  });
  expect(lines.join("\n")).not.toContain(CRM);
  expect(lines.join("\n")).not.toContain(ALERTS);
});

test("bad pairs are refused naming the variable, never echoing a token", () => {
  const refusal = (value: string, env: Record<string, string> = {}) => {
    try {
      loadConfig({ ...env, SWITCHBOARD_APP_TOKENS: value });
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error(`${value} was accepted`);
  };
  expect(refusal("crm")).toContain("gives crm a token shorter than 16 characters");
  expect(refusal("crm=short")).toContain("shorter than 16 characters");
  expect(refusal(`has space=${CRM}`)).toContain('names an app "has space"');
  expect(refusal(`crm=${CRM},crm=${ALERTS}`)).toContain("names crm twice");
  expect(refusal(`crm=${CRM},alerts=${CRM}`)).toContain("already in use");
  const sameAsOperator = refusal(`crm=${CRM}`, { SWITCHBOARD_OPERATOR_TOKEN: CRM });
  expect(sameAsOperator).toContain("already in use");
  for (const message of [sameAsOperator, refusal(`crm=${CRM},alerts=${CRM}`)]) {
    expect(message).toStartWith("SWITCHBOARD_APP_TOKENS");
    expect(message).not.toContain(CRM);
  }
});

test("an operator token alone configures the api channel; nothing configures none", () => {
  expect(Object.keys(loadConfig({ SWITCHBOARD_OPERATOR_TOKEN: "operator-token-0123456" }).channels)).toEqual([
    "api",
  ]);
  expect(loadConfig({}).channels).toEqual({});
});
