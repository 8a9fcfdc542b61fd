/**
 * Two Matrix bots in one gateway, on one homeserver: the `default` bot of MATRIX_* and an account
 * `support` from SWITCHBOARD_CONFIG's `accounts`. Each joins rooms on its own allow list's
 * invites and answers only through itself; in a room with both, each keeps its own conversation
 * (a named account's conversation keys carry its user id). Composed in this process.
 */

import { describe, expect, test } from "bun:test";
import { startMatrixEmulator } from "../emulators/matrix/index.ts";
import * as accounts from "./support/accounts.ts";
import { useE2eFixture } from "./support/fixture.ts";

const fixture = useE2eFixture("switchboard-e2e-accounts-mx-", () => startMatrixEmulator());
const { dir, llm, platform: mx } = fixture;
const personal = mx.bot;
const support = mx.createUser("support");
const alice = mx.createUser("alice").userId;
/** Only on the support bot's list. */
const bob = mx.createUser("bob").userId;
const TIMEOUT = 20_000;

function env(withSupport: boolean): Record<string, string> {
  const configFile = accounts.writeSupportConfig(
    dir.path,
    "matrix",
    withSupport,
    {
      homeserverUrl: mx.url,
      userId: support.userId,
      accessToken: "${MX_SUPPORT_TOKEN}",
      allowedUsers: [alice, bob],
    },
    {
      "matrix:dm": { inputPolicy: "queue", delivery: "terminal" },
      "matrix:group": { inputPolicy: "queue", delivery: "terminal" },
    },
  );
  return accounts.gatewayEnv(fixture, configFile, {
    MATRIX_HOMESERVER_URL: mx.url,
    MATRIX_ACCESS_TOKEN: personal.token,
    MATRIX_USER_ID: personal.userId,
    MATRIX_ALLOWED_USERS: alice,
    MX_SUPPORT_TOKEN: support.token,
  });
}

const shownBy = (room: string, bot: string) => mx.shown(room, bot).map((m) => m.body);

function reply(room: string, bot: string, text: string): Promise<string> {
  return accounts.replyThrough(mx, () => shownBy(room, bot), text, `${bot} in ${room}`);
}

/** A room `user` made and invited `bot` to; resolves once the bot joined. */
async function dm(user: string, bot: string): Promise<string> {
  const room = mx.createRoom(user, { inviteBot: false });
  mx.invite(room, user, bot);
  await mx.waitFor(() => mx.membership(room, bot) === "join", TIMEOUT, `${bot}'s join`);
  return room;
}

const gateways = accounts.oneGatewayAtATime();
const start = (withSupport: boolean) => gateways.start(env(withSupport));

describe("two Matrix bots in one gateway", () => {
  test("each bot joins on its own list's invites and answers only through itself", async () => {
    const gateway = await start(true);
    const withPersonal = await dm(alice, personal.userId);
    const withSupport = await dm(alice, support.userId);
    mx.sendText(withPersonal, alice, "hello personal bot");
    mx.sendText(withSupport, alice, "hello support bot");
    await reply(withPersonal, personal.userId, "echo: hello personal bot");
    await reply(withSupport, support.userId, "echo: hello support bot");
    expect(shownBy(withPersonal, support.userId)).toEqual([]);
    expect(shownBy(withSupport, personal.userId)).toEqual([]);

    // Bob is on the support bot's list only: the personal bot declines his invite.
    const bobsRoom = mx.createRoom(bob, { inviteBot: false });
    mx.invite(bobsRoom, bob, personal.userId);
    await mx.waitFor(() => mx.membership(bobsRoom, personal.userId) === "leave", TIMEOUT, "the decline");
    const bobsSupport = await dm(bob, support.userId);
    mx.sendText(bobsSupport, bob, "bob asks support");
    await reply(bobsSupport, support.userId, "echo: bob asks support");

    await accounts.expectServing(gateway, "matrix", ["support"]);
    accounts.expectBoundOnly(llm, accounts.SUPPORT_INSTRUCTIONS, "hello support bot", "hello personal bot");
  }, 60_000);

  test("in a room with both bots, each answers its own mention in its own conversation, also after a restart", async () => {
    await start(true);
    const room = mx.createRoom(alice, { inviteBot: false, members: [personal.userId, support.userId] });
    const mention = (bot: string, text: string) =>
      mx.sendText(room, alice, `${bot}: ${text}`, { "m.mentions": { user_ids: [bot] } });
    mention(support.userId, "first for support");
    await reply(room, support.userId, "first for support");
    mention(personal.userId, "first for personal");
    await reply(room, personal.userId, "first for personal");
    expect(shownBy(room, personal.userId).join("\n")).not.toContain("for support");
    expect(shownBy(room, support.userId).join("\n")).not.toContain("for personal");

    await start(true);
    mention(support.userId, "second for support");
    await reply(room, support.userId, "second for support");
    mention(personal.userId, "second for personal");
    await reply(room, personal.userId, "second for personal");
    accounts.expectOwnHistories(
      llm,
      ["second for support", "first for support"],
      ["second for personal", "first for personal"],
    );
  }, 60_000);

  test("a reply queued for a removed account fails naming it; the other bot never sends it", async () => {
    const withSupport = await start(true);
    const room = await dm(alice, support.userId);
    for (let i = 0; i < 20; i++)
      mx.failNext("send", { kind: "server_error", status: 502 }, { eventType: "m.room.message" });
    mx.sendText(room, alice, "stranded reply");
    const { failed } = await accounts.strandedReply(withSupport, "stranded reply", support.userId, () =>
      start(false),
    );
    expect(failed.lastError).toContain(`matrix account ${support.userId}`);
    expect(shownBy(room, personal.userId)).toEqual([]);
    mx.clearFaults();
  }, 60_000);
});
