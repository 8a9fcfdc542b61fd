/**
 * The chats of a chaos run and the people in them: Telegram DMs, a group and a forum topic;
 * DMs and a group of a second Telegram bot, the account `support` (the same people, so a user's
 * DM with each bot has the same chat id, as on Telegram); Discord DMs, a guild channel and a thread; WhatsApp DMs (the Cloud API has no groups here);
 * Matrix DMs and a room where the bot answers when mentioned.
 * Each place knows its input policy (from the config file the gateway gets) and how to post, and
 * replay, a message there.
 */
import type { APIUser } from "discord.js";
import type { InputPolicy } from "../../src/runtime/types.ts";
import type { DiscordEmulator } from "../emulators/discord/index.ts";
import type { MatrixEmulator } from "../emulators/matrix/index.ts";
import {
  groupChat,
  privateChat,
  supergroupChat,
  type TelegramEmulator,
  type TgChat,
  type TgUser,
  user,
} from "../emulators/telegram/index.ts";
import type { WebhookBody, WhatsAppEmulator } from "../emulators/whatsapp/index.ts";

export type ChaosChannel = "telegram" | "discord" | "whatsapp" | "matrix";

/**
 * The second Telegram bot: `accounts.telegram.support` in SWITCHBOARD_CONFIG, its token by
 * reference (`TG_SUPPORT_TOKEN`), served by the same emulator as the default bot. The gateway's
 * account for it is its bot id.
 */
export const SUPPORT_BOT = {
  name: "support",
  token: "222222222:AAChaosSupportBotTokenForTests_abcd",
  id: 222222222,
  username: "chaos_support_bot",
  tokenVariable: "TG_SUPPORT_TOKEN",
} as const;

/**
 * The chat key prefix of a Telegram bot's chats: `tg` for the default bot's, `tg@<name>` for a
 * named account's (`account`: the bot id). A user's DM with each bot has the same chat id, yet is
 * another chat.
 */
export function telegramChatPrefix(account: string | undefined): string {
  return account === String(SUPPORT_BOT.id) ? `tg@${SUPPORT_BOT.name}` : "tg";
}

/**
 * The surfaces' behaviour and the agent's tools, written to the file SWITCHBOARD_CONFIG names. The
 * flood limit is raised out of the way: the soak's users write in bursts, and every message it
 * sends must be answered. The tools come from one Streamable HTTP MCP server (the official SDK's,
 * test/fixtures/mcp/http-server.ts) that the driver runs for the whole soak, so it outlives every
 * gateway and counts the effects in one file: as `ledger` its calls run without asking
 * (`slow_append`, not idempotent: "begin <id>" at once, "end <id>" when done), as `retry` the same
 * tool declared idempotent (run again once after a crash), as `notes` they wait for approval
 * (`append_note` writes "<id>"), which expires after `approvalTimeoutMs`. The child agent `helper`
 * (`spawn_agent`) gets no tools: it only answers its task.
 */
export function chaosConfig(
  mcpUrl: string,
  approvalTimeoutMs: number,
  support: { apiRoot: string; allowedUsers: string },
) {
  const server = (approval: "ask" | "never", idempotent = false) => ({
    url: mcpUrl,
    approval,
    tools: { allow: [approval === "ask" ? "append_note" : "slow_append"] },
    ...(idempotent ? { idempotent: ["slow_append"] } : {}),
  });
  return {
    version: 1,
    approvalTimeoutMs,
    surfaces: {
      "*:*": { messagesPerMinute: 10_000 },
      "telegram:dm": { inputPolicy: "supersede", delivery: "stream" },
      "telegram:group": { inputPolicy: "queue", delivery: "terminal" },
      "telegram:thread": { inputPolicy: "queue", delivery: "stream", requireMention: false },
      "discord:dm": { inputPolicy: "interrupt", delivery: "terminal" },
      "discord:group": { inputPolicy: "queue", delivery: "terminal" },
      "discord:thread": { inputPolicy: "supersede", delivery: "terminal" },
      // No edits on WhatsApp: every answer is one message (stream mode would degrade to this).
      "whatsapp:dm": { inputPolicy: "queue", delivery: "terminal" },
      // Terminal: one event per answer chunk, each sent under its record's txnId (no edits).
      "matrix:dm": { inputPolicy: "queue", delivery: "terminal" },
      "matrix:group": { inputPolicy: "queue", delivery: "terminal" },
      // Conversation API messages: every one answered, in order.
      "api:dm": { inputPolicy: "queue", delivery: "terminal" },
    },
    mcpServers: { ledger: server("never"), retry: server("never", true), notes: server("ask") },
    accounts: {
      telegram: {
        [SUPPORT_BOT.name]: {
          token: `\${${SUPPORT_BOT.tokenVariable}}`,
          apiRoot: support.apiRoot,
          allowedUsers: support.allowedUsers,
        },
      },
    },
    agents: { helper: { description: "answers a task in one step", tools: [], maxSteps: 2 } },
  } as const;
}

export interface Place {
  name: string;
  channel: ChaosChannel;
  /**
   * Where the bot's answers appear: `tg:<chat>[:<thread>]` (`tg@support:…` for the support bot's
   * chats), `dc:<channel>`, `wa:<wa_id>` or `mx:<room id>`.
   */
  chat: string;
  /**
   * Telegram: the bot users talk to here, and the gateway's account for it (the bot id): every
   * answer must leave through it.
   */
  telegram?: TelegramEmulator;
  account?: string;
  policy: Exclude<InputPolicy, "interrupt-next">;
  /** Group-like places: a message must mention the bot to be answered. */
  needsMention: boolean;
  /** Who may write here (the DM's owner, or everyone allowed). */
  speakers: readonly string[];
  /** Posts `text` as `speaker`, mentioning the bot when `mention`; returns the platform's update key. */
  post(speaker: string, text: string, mention: boolean): string;
  /**
   * The platform delivers that update again (a duplicate or a late replay; WhatsApp: the same
   * webhook body; Matrix: the same event at a new position of the sync stream).
   */
  replay(updateKey: string): void;
  /**
   * `speaker` edits the message `updateKey` posted to `text` (a mention kept where needed); the
   * returned `again` delivers the edit's update once more. Telegram, Discord and Matrix.
   */
  edit?(speaker: string, updateKey: string, text: string): { again(): void };
  /**
   * `speaker` deletes the message `updateKey` posted; `again` delivers the delete once more.
   * Discord and Matrix (Telegram tells bots of no deletes).
   */
  remove?(speaker: string, updateKey: string): { again(): void };
  /**
   * Telegram only: `speaker` presses the button `label` under the bot's message `messageId`;
   * returns the update key (null when that message or button is gone).
   */
  press?(speaker: string, messageId: number, label: string): string | null;
  /**
   * Telegram only: `speaker` sends a photo or a voice note (served by the emulator's getFile)
   * captioned `caption`; returns the update key and the file id the gateway downloads.
   */
  postMedia?(
    speaker: string,
    caption: string,
    media: { kind: "photo" | "voice"; bytes: Uint8Array; name: string },
  ): { updateKey: string; fileId: string };
}

export interface Cast {
  /** Where allowed users talk; every message there is answered (mentioning the bot where needed). */
  places: Place[];
  /** A place (or a stranger's DM) by name; throws for an unknown name. */
  byName(name: string): Place;
  /** A user no allowlist names: their messages must never reach the model. */
  stranger: { telegramDm: Place; discordDm: Place; whatsappDm: Place; matrixDm: Place };
  /**
   * Carol's Telegram DM, apart from the random traffic: she talks, then sends `/forget confirm`
   * mid-conversation, and talks again in the fresh conversation.
   */
  forgetter: Place;
  /**
   * Dave's Telegram DM: nobody listed him, so with `pairing` in the allowlist his first message
   * gets a pairing code; the operator approves it, and from then on he is answered.
   */
  pairer: Place;
  /**
   * A Telegram group (queue policy) where only the opening posts: its approval requests are
   * decided one after another as planned (approve, deny, pressed twice, left to expire).
   */
  approver: Place;
  /** Every place above, strangers' DMs included. */
  everyPlace: Place[];
  telegramAllowed: string;
  /** Who may talk to the support bot (its account's `allowedUsers`). */
  supportAllowed: string;
  discordAllowed: string;
  whatsappAllowed: string;
  matrixAllowed: string;
}

export function createCast(
  telegram: TelegramEmulator,
  discord: DiscordEmulator,
  whatsapp: WhatsAppEmulator,
  matrix: MatrixEmulator,
  support: TelegramEmulator,
): Cast {
  /** Each posted message's id, by its bot and the update that carried it (for edits). */
  const tgMessageIds = new Map<string, number>();
  const tgUsers: Record<string, TgUser> = {
    alice: user(1001, "Alice"),
    bob: user(1002, "Bob"),
    carol: user(1003, "Carol"),
    dave: user(1004, "Dave"),
    mallory: user(6666, "Mallory"),
  };
  const group = groupChat(-5001, "Team");
  const supportGroup = groupChat(-5101, "Support desk");
  const approvalsGroup = groupChat(-5003, "Approvals");
  const forum = supergroupChat(-1005002, "Forum", { isForum: true });
  const topic = { threadId: 77, name: "Chaos topic" };

  /** A Telegram place where users talk to `options.bot` (default: the default bot). */
  const telegramPlace = (
    name: string,
    chat: TgChat,
    policy: Place["policy"],
    speakers: string[],
    options: { topic?: typeof topic; needsMention: boolean; bot?: TelegramEmulator },
  ): Place => {
    const bot = options.bot ?? telegram;
    const account = String(bot.bot.id);
    const botMention = `@${bot.bot.username}`;
    const prefix = telegramChatPrefix(account);
    return {
      name,
      channel: "telegram",
      chat: options.topic ? `${prefix}:${chat.id}:${options.topic.threadId}` : `${prefix}:${chat.id}`,
      telegram: bot,
      account,
      policy,
      needsMention: options.needsMention,
      speakers,
      post(speaker, text, mention) {
        const from = tgUsers[speaker];
        if (!from) throw new Error(`no Telegram user ${speaker}`);
        const { update, message } = bot.incoming({
          chat,
          from,
          text: mention ? `${botMention} ${text}` : text,
          ...(options.topic ? { topic: options.topic } : {}),
        });
        tgMessageIds.set(`${account}:${update.update_id}`, message.message_id);
        return String(update.update_id);
      },
      edit(_speaker, updateKey, text) {
        const messageId = tgMessageIds.get(`${account}:${updateKey}`);
        if (messageId === undefined) throw new Error(`no Telegram message for update ${updateKey}`);
        const { update } = bot.incomingEdit(
          chat.id,
          messageId,
          options.needsMention ? `${botMention} ${text}` : text,
        );
        return { again: () => void bot.deliverAgain(update.update_id) };
      },
      replay(updateKey) {
        bot.deliverAgain(Number(updateKey));
      },
      postMedia(speaker, caption, media) {
        const from = tgUsers[speaker];
        if (!from) throw new Error(`no Telegram user ${speaker}`);
        // A photo's sizes are files of their own: the largest (the only one here) is `<id>-0`.
        const fileId = media.kind === "photo" ? `${media.name}-0` : media.name;
        bot.files.add(fileId, media.bytes);
        const { update } = bot.incoming({
          chat,
          from,
          caption,
          ...(options.topic ? { topic: options.topic } : {}),
          media:
            media.kind === "photo"
              ? {
                  kind: "photo",
                  fileId: media.name,
                  sizes: [{ width: 64, height: 48, fileSize: media.bytes.byteLength }],
                }
              : { kind: "voice", fileId: media.name, durationSeconds: 2, fileSize: media.bytes.byteLength },
        });
        return { updateKey: String(update.update_id), fileId };
      },
      press(speaker, messageId, label) {
        const from = tgUsers[speaker];
        if (!from) throw new Error(`no Telegram user ${speaker}`);
        const message = bot.messages(chat.id).find((m) => m.messageId === messageId);
        if (!message?.buttons?.flat().some((b) => b.text === label)) return null;
        return String(bot.press(chat.id, messageId, from, { label }).update.update_id);
      },
    };
  };

  const dcUsers: Record<string, APIUser> = {
    alice: discord.createUser("alice"),
    bob: discord.createUser("bob"),
    mallory: discord.createUser("mallory"),
  };
  const dcUser = (speaker: string) => {
    const found = dcUsers[speaker];
    if (!found) throw new Error(`no Discord user ${speaker}`);
    return found;
  };
  const thread = discord.createThread({
    name: "chaos-thread",
    ownerId: dcUser("alice").id,
    botIsMember: true,
  });

  const discordPlace = (
    name: string,
    channelId: string,
    policy: Place["policy"],
    speakers: string[],
    options: { dmOf?: string; needsMention: boolean },
  ): Place => ({
    name,
    channel: "discord",
    chat: `dc:${channelId}`,
    policy,
    needsMention: options.needsMention,
    speakers,
    post(speaker, text, mention) {
      const author = dcUser(speaker).id;
      const sent =
        options.dmOf === undefined
          ? discord.sendChannelMessage(channelId, author, text, { mentionBot: mention })
          : discord.sendDm(author, text);
      return sent.id;
    },
    replay(updateKey) {
      discord.redispatch(updateKey);
    },
    edit(_speaker, updateKey, text) {
      const content = options.needsMention ? `<@${discord.bot.id}> ${text}` : text;
      const editedAtMs = Date.now();
      discord.editUserMessage(updateKey, content, editedAtMs);
      return { again: () => discord.editUserMessage(updateKey, content, editedAtMs) };
    },
    remove(_speaker, updateKey) {
      discord.deleteUserMessage(updateKey);
      return { again: () => discord.deleteUserMessage(updateKey) };
    },
  });

  const waUsers: Record<string, { waId: string; name: string }> = {
    alice: { waId: "15550001001", name: "Alice" },
    bob: { waId: "15550001002", name: "Bob" },
    mallory: { waId: "15550006666", name: "Mallory" },
  };
  /** Each message's webhook body, by wamid: Meta redelivers the very same body. */
  const waBodies = new Map<string, WebhookBody>();
  const whatsappPlace = (name: string, speaker: string): Place => {
    const person = waUsers[speaker];
    if (!person) throw new Error(`no WhatsApp user ${speaker}`);
    return {
      name,
      channel: "whatsapp",
      chat: `wa:${person.waId}`,
      policy: "queue",
      needsMention: false,
      speakers: [speaker],
      post(_speaker, text) {
        const { message, delivery } = whatsapp.incoming({ from: person.waId, name: person.name, text });
        waBodies.set(message.id, delivery.body);
        return message.id;
      },
      replay(updateKey) {
        const body = waBodies.get(updateKey);
        if (!body) throw new Error(`no WhatsApp webhook carried ${updateKey}`);
        whatsapp.deliverRaw(body);
      },
    };
  };

  const mxUsers: Record<string, string> = {
    alice: matrix.createUser("alice").userId,
    bob: matrix.createUser("bob").userId,
    mallory: matrix.createUser("mallory").userId,
  };
  const mxUser = (speaker: string) => {
    const found = mxUsers[speaker];
    if (!found) throw new Error(`no Matrix user ${speaker}`);
    return found;
  };
  const botId = matrix.bot.userId;
  /**
   * A room the bot joined before the run (a DM: the bot and `speakers[0]`; else a room of all the
   * speakers, gated on a mention). Mallory's DM too: the bot joined it back when she was allowed, so
   * her messages reach the gateway, whose allowlist must drop them.
   */
  const matrixPlace = (name: string, speakers: string[], needsMention: boolean): Place => {
    const [creator, ...members] = speakers.map(mxUser);
    const roomId = matrix.createRoom(creator!, { members, botJoined: true });
    return {
      name,
      channel: "matrix",
      chat: `mx:${roomId}`,
      policy: "queue",
      needsMention,
      speakers,
      post(speaker, text, mention) {
        return mention
          ? matrix.sendText(roomId, mxUser(speaker), `${botId}: ${text}`, {
              "m.mentions": { user_ids: [botId] },
            })
          : matrix.sendText(roomId, mxUser(speaker), text);
      },
      replay(updateKey) {
        matrix.redeliver(roomId, updateKey);
      },
      edit(speaker, updateKey, text) {
        const body = needsMention ? `${botId}: ${text}` : text;
        const eventId = matrix.sendEvent(roomId, mxUser(speaker), "m.room.message", {
          msgtype: "m.text",
          body: `* ${body}`,
          "m.new_content": { msgtype: "m.text", body },
          "m.relates_to": { rel_type: "m.replace", event_id: updateKey },
        });
        return { again: () => matrix.redeliver(roomId, eventId) };
      },
      remove(speaker, updateKey) {
        const redaction = matrix.redact(roomId, mxUser(speaker), updateKey);
        return { again: () => matrix.redeliver(roomId, redaction) };
      },
    };
  };

  const dmChannel = (speaker: string) => discord.dmChannelId(dcUser(speaker).id);
  const places = [
    telegramPlace("tg-dm-alice", privateChat(tgUsers.alice!), "supersede", ["alice"], {
      needsMention: false,
    }),
    telegramPlace("tg-dm-bob", privateChat(tgUsers.bob!), "supersede", ["bob"], { needsMention: false }),
    telegramPlace("tg-group", group, "queue", ["alice", "bob"], { needsMention: true }),
    telegramPlace("tg-topic", forum, "queue", ["alice", "bob"], { topic, needsMention: false }),
    discordPlace("dc-dm-alice", dmChannel("alice"), "interrupt", ["alice"], {
      dmOf: "alice",
      needsMention: false,
    }),
    discordPlace("dc-dm-bob", dmChannel("bob"), "interrupt", ["bob"], { dmOf: "bob", needsMention: false }),
    discordPlace("dc-general", discord.generalChannelId, "queue", ["alice", "bob"], { needsMention: true }),
    discordPlace("dc-thread", thread, "supersede", ["alice", "bob"], { needsMention: false }),
    whatsappPlace("wa-dm-alice", "alice"),
    whatsappPlace("wa-dm-bob", "bob"),
    matrixPlace("mx-dm-alice", ["alice"], false),
    matrixPlace("mx-dm-bob", ["bob"], false),
    matrixPlace("mx-room", ["alice", "bob"], true),
    // The support bot: Alice's and Bob's DMs with it (the same chat ids as theirs with the default
    // bot) and a group of its own, where it answers when mentioned.
    telegramPlace("sup-dm-alice", privateChat(tgUsers.alice!), "supersede", ["alice"], {
      needsMention: false,
      bot: support,
    }),
    telegramPlace("sup-dm-bob", privateChat(tgUsers.bob!), "supersede", ["bob"], {
      needsMention: false,
      bot: support,
    }),
    telegramPlace("sup-group", supportGroup, "queue", ["alice", "bob"], { needsMention: true, bot: support }),
  ];
  const stranger = {
    telegramDm: telegramPlace("tg-dm-mallory", privateChat(tgUsers.mallory!), "supersede", ["mallory"], {
      needsMention: false,
    }),
    discordDm: discordPlace("dc-dm-mallory", dmChannel("mallory"), "interrupt", ["mallory"], {
      dmOf: "mallory",
      needsMention: false,
    }),
    whatsappDm: whatsappPlace("wa-dm-mallory", "mallory"),
    matrixDm: matrixPlace("mx-dm-mallory", ["mallory"], false),
  };
  const forgetter = telegramPlace("tg-dm-carol", privateChat(tgUsers.carol!), "supersede", ["carol"], {
    needsMention: false,
  });
  const pairer = telegramPlace("tg-dm-dave", privateChat(tgUsers.dave!), "supersede", ["dave"], {
    needsMention: false,
  });
  const approver = telegramPlace("tg-approvals", approvalsGroup, "queue", ["alice", "bob"], {
    needsMention: true,
  });
  const everyPlace = [
    ...places,
    forgetter,
    pairer,
    approver,
    stranger.telegramDm,
    stranger.discordDm,
    stranger.whatsappDm,
    stranger.matrixDm,
  ];
  return {
    places,
    stranger,
    forgetter,
    pairer,
    approver,
    everyPlace,
    byName(name) {
      const found = everyPlace.find((p) => p.name === name);
      if (!found) throw new Error(`no place ${name}`);
      return found;
    },
    telegramAllowed: `pairing,${tgUsers.alice!.id},${tgUsers.bob!.id},${tgUsers.carol!.id}`,
    supportAllowed: `${tgUsers.alice!.id},${tgUsers.bob!.id}`,
    discordAllowed: `${dcUser("alice").id},${dcUser("bob").id}`,
    whatsappAllowed: `${waUsers.alice!.waId},${waUsers.bob!.waId}`,
    matrixAllowed: `${mxUser("alice")},${mxUser("bob")}`,
  };
}
