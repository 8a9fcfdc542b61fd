import { describe, expect, test } from "bun:test";
import { historyScopeOf } from "../../src/search/scope.ts";

describe("historyScopeOf", () => {
  const thread = {
    channel: "slack",
    principalId: "U1",
    conversationKey: "sl:T1:ch:C1:thread:1.1",
    roomKey: "sl:T1:ch:C1",
  };
  const dm = { channel: "slack", principalId: "U1", conversationKey: "sl:T1:dm:U1" };

  test("user by default: the same user on the same platform", () => {
    expect(historyScopeOf(undefined, "c1", thread)).toEqual({ kind: "principal", principal: "slack:U1" });
    expect(historyScopeOf("user", "c1", thread)).toEqual({ kind: "principal", principal: "slack:U1" });
  });

  test("user through a named account: that account's user only, not the same user of another bot", () => {
    expect(historyScopeOf("user", "c1", { ...dm, accountName: "support" })).toEqual({
      kind: "principal",
      principal: "slack:support:U1",
    });
  });

  test("channel: the thread's room; a DM (no room named) is its own room", () => {
    expect(historyScopeOf("channel", "c1", thread)).toEqual({ kind: "room", room: "slack:sl:T1:ch:C1" });
    expect(historyScopeOf("channel", "c2", dm)).toEqual({ kind: "room", room: "slack:sl:T1:dm:U1" });
  });

  test("conversation narrows to this one; off offers no history tools", () => {
    expect(historyScopeOf("conversation", "c1", thread)).toEqual({
      kind: "conversation",
      conversationId: "c1",
    });
    expect(historyScopeOf("off", "c1", thread)).toBeNull();
  });
});
