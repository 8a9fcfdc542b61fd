/**
 * The people talking in a chaos run: what they post (text, tool calls, approvals and presses,
 * photos and voice notes, schedules, /stop, /export, /forget, pairing), when, and the duplicates
 * and replays the platforms add.
 */
import sharp from "sharp";
import type { DiscordEmulator } from "../emulators/discord/index.ts";
import type { MatrixEmulator } from "../emulators/matrix/index.ts";
import type { TelegramEmulator } from "../emulators/telegram/index.ts";
import type { WhatsAppEmulator } from "../emulators/whatsapp/index.ts";
import type { FakeLlmServer } from "../support/llm/fake-llm-server.ts";
import type { Cast, Place } from "./cast.ts";
import { approvePairing } from "./operator.ts";
import type { ChaosOptions } from "./options.ts";
import type { Random } from "./random.ts";
import type { ApiInput, SentInput, SpawnInput } from "./snapshot.ts";
import type { GatewaySupervisor } from "./supervisor.ts";

export interface Peers {
  telegram: TelegramEmulator;
  /** The named Telegram accounts' bots, by account name, on the same emulator as `telegram`. */
  telegramAccounts: Record<string, TelegramEmulator>;
  discord: DiscordEmulator;
  whatsapp: WhatsAppEmulator;
  matrix: MatrixEmulator;
  llm: FakeLlmServer;
}

/** How an approval request of the opening is to be decided. */
export type PlannedDecision = "approve" | "deny" | "approve-twice" | "expire";

/** How a scripted answer streams: in `chunks` pieces, `chunkDelayMs` apart. */
export interface Pace {
  chunks: number;
  chunkDelayMs: number;
}

/**
 * Posts a minute a Telegram chat gets at most while another place has room: a bot may send 20
 * messages a minute in a group and one a second in a chat, and an answer takes one to three (a
 * streamed preview and its edits, an approval's prompt and outcome), with the gateway down a
 * quarter of the time between kills.
 */
const TELEGRAM_POSTS_PER_MINUTE = { group: 5, chat: 12 };

export const OPERATOR_TOKEN = "chaos-operator-token-0123456789";

/**
 * Discord has no replay after a fresh IDENTIFY, so the driver plays an at-least-once platform: a
 * message last delivered this close to a death (or while the gateway was down) is delivered again.
 */
const DISCORD_AT_RISK_MS = 10_000;

/** An Ogg Opus header: enough for the type to be sniffed as audio/ogg. */
function oggOpus(bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  out.set(new TextEncoder().encode("OggS"), 0);
  out[4] = 0;
  out[5] = 2;
  out.set(new TextEncoder().encode("OpusHead"), 28);
  return out;
}

export function codesIn(telegram: TelegramEmulator, chatId: number): string[] {
  return telegram
    .messages(chatId)
    .filter((m) => m.fromBot)
    .flatMap((m) => [...m.visibleText.matchAll(/pairing code is ([A-Z0-9]{8})/g)].map((x) => x[1]!));
}

/** Polls `done` every 100 ms until it holds (true) or `timeoutMs` passed (false). */
export async function waitFor(done: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await done()) return true;
    if (Date.now() >= deadline) return false;
    await Bun.sleep(100);
  }
}

export async function sleepUntil(atMs: number): Promise<void> {
  const waitMs = atMs - Date.now();
  if (waitMs > 0) await Bun.sleep(waitMs);
}

/** The people talking: what they post, when, and the duplicates the platforms add. */
export class Traffic {
  /** `offeredAtMs`: when the platform last delivered it (posted or redelivered). */
  readonly sent: Array<SentInput & { sentAtMs: number; offeredAtMs: number }> = [];
  readonly duplicates = {
    immediate: 0,
    replays: 0,
    discordRedeliveries: 0,
    apiRepeats: 0,
    /** Edits and deletes posted (each delivered twice). */
    editsAndDeletes: 0,
  };
  readonly redeliveries: Array<{ atMs: number; sinceMs: number; ids: string[] }> = [];
  readonly presses = { approve: 0, deny: 0, again: 0, replays: 0 };
  /** Pairing episodes: the user, and what each approval of the code answered. */
  readonly pairings: Array<{ userId: number; redemptions: string[] }> = [];
  /** The `/forget confirm` updates posted, and when. */
  readonly forgets: Array<{ updateKey: string; atMs: number }> = [];
  /** Forget episodes run one after another (each waits for its "Done"). */
  private forgetting: Promise<void> = Promise.resolve();
  private pairing: Promise<void> = Promise.resolve();
  /** Approval calls whose prompt the driver has not pressed yet, and presses made (for replays). */
  private readonly awaitingPress = new Map<
    string,
    { place: Place; speaker: string; decision: PlannedDecision | undefined }
  >();
  /** Messages that made the model call `spawn_agent` (see postSpawn). */
  readonly spawns: SpawnInput[] = [];
  /**
   * Conversation API calls (`k…`): messages to api conversations and proactive sends through
   * `POST /api/send`, each with every answer its requests (first and repeated) got.
   */
  readonly api: ApiInput[] = [];
  /** API calls still retrying (the gateway is down) and edits still to make: awaited by apiDone. */
  private pendingCalls: Promise<void>[] = [];
  /** The api conversations messages go to (created when first needed). */
  private apiConversations: string[] = [];
  /** The `/stop` and `/export` commands posted. */
  readonly commands: Array<{ id: string; name: "stop" | "export" }> = [];
  private readonly pressed: Array<{ place: Place; updateKey: string }> = [];
  private nextId = 1;
  /** When each chat got its recent posts (see roomy). */
  private readonly postTimes = new Map<string, number[]>();

  constructor(
    private readonly cast: Cast,
    private readonly peers: Peers,
    private readonly random: Random,
    private readonly options: ChaosOptions,
    private readonly supervisor: GatewaySupervisor,
  ) {}

  get places(): readonly Place[] {
    return this.cast.places;
  }

  /**
   * The random traffic: `messages` posts (the options' unless given) spread over [startMs, endMs],
   * with the schedules, `/forget` and pairing episodes the options ask for at fixed slots among them.
   */
  async run(startMs: number, endMs: number, messages = this.options.messages): Promise<void> {
    const scheduleSlots = new Set(
      Array.from({ length: this.options.schedules }, () => this.random.int(0, messages - 1)),
    );
    const forgetSlots = new Set(
      Array.from({ length: this.options.forgets ?? 0 }, (_, k) =>
        Math.floor(((k + 0.5) / (this.options.forgets ?? 1)) * messages * 0.8),
      ),
    );
    const pairSlots = new Set(
      Array.from({ length: this.options.pairings ?? 0 }, (_, k) =>
        Math.floor(((k + 0.3) / (this.options.pairings ?? 1)) * messages * 0.6),
      ),
    );
    const commands = this.options.commands ?? 0;
    const commandSlots = new Map(
      Array.from({ length: commands }, (_, k) => [
        Math.floor(((k + 0.5) / commands) * messages * 0.9),
        k % 2 === 0 ? ("stop" as const) : ("export" as const),
      ]),
    );
    for (let i = 0; i < messages; i += 1) {
      const jitter = this.random.next() * 0.8;
      await sleepUntil(startMs + ((i + jitter) / messages) * (endMs - startMs));
      if (scheduleSlots.has(i)) this.postSchedule();
      if (forgetSlots.has(i)) this.forget();
      if (pairSlots.has(i)) this.pair();
      const command = commandSlots.get(i);
      if (command)
        this.postCommand(
          command,
          this.random.pick(
            this.roomy(this.cast.places.filter((p) => p.press !== undefined && !p.needsMention)),
          ),
        );
      const toolRate = this.options.toolRate ?? 0;
      const roll = this.random.next();
      const mediaRate = this.options.mediaRate ?? 0;
      if (roll < 0.1) this.postIgnorable();
      else if (roll > 1 - mediaRate) await this.postMedia();
      else if (roll < 0.1 + toolRate) this.postToolCall(this.random.chance(0.5) ? "t" : "r");
      else if (roll < 0.1 + 2 * toolRate) this.postToolCall("p");
      else if (roll < 0.1 + 2 * toolRate + (this.options.spawnRate ?? 0)) this.postSpawn();
      else if (roll < 0.1 + 2 * toolRate + (this.options.spawnRate ?? 0) + (this.options.apiRate ?? 0)) {
        if (this.random.chance(0.7)) this.postApiMessage();
        else this.postApiSend();
      } else if (this.random.chance(this.options.editRate ?? 0)) this.postAndEdit();
      else this.postAnswerable();
      if (this.random.chance(this.options.replayRate)) this.repeatApi();
      // Carol's DM is left out: Telegram redelivers only unconfirmed updates, and a purge takes
      // the receipts of its conversation along, so an old replay there would be a new message.
      const replayable = this.sent.filter((s) => s.place !== this.cast.forgetter.name);
      if (this.random.chance(this.options.replayRate) && replayable.length > 1) {
        const old = this.random.pick(replayable);
        this.cast.byName(old.place).replay(old.updateKey);
        this.duplicates.replays += 1;
      }
    }
    await this.episodesDone();
  }

  /** Starts a `/forget` episode in Carol's DM, after any still going (see forgetEpisode). */
  forget(): void {
    this.forgetting = this.forgetting.then(() => this.forgetEpisode());
  }

  /** Starts the pairing episode in Dave's DM (only the first call does anything: see pairingEpisode). */
  pair(): void {
    this.pairing = this.pairing.then(() => this.pairingEpisode());
  }

  /** Resolves when the `/forget` and pairing episodes started so far are over. */
  async episodesDone(): Promise<void> {
    await this.forgetting;
    await this.pairing;
    await this.apiDone();
  }

  /** Resolves when every conversation API call made so far was answered (or gave up), and every edit made. */
  async apiDone(): Promise<void> {
    while (this.pendingCalls.length > 0) await Promise.all(this.pendingCalls.splice(0));
  }

  /**
   * A message through the conversation API (`POST /api/conversations/:id/messages`) to one of two
   * api conversations, with an idempotency key; retried with the same key while the gateway is
   * down or answers 5xx, as a client would. The answer is marked `a-k…` (recorded as delivered:
   * the api channel shows nothing anywhere). Returns the id.
   */
  postApiMessage(): string {
    const id = this.id("k");
    this.script(id);
    const input: ApiInput = { id, kind: "message", key: `chaos-${id}`, answers: [], errors: [] };
    this.api.push(input);
    this.pendingCalls.push(
      (async () => {
        if (this.apiConversations.length < 2) {
          const created = await this.callApi("/api/conversations", {});
          if ("conversationId" in created) this.apiConversations.push(String(created.conversationId));
          else input.errors.push(`creating its conversation: ${created.error}`);
        }
        const conversationId = this.random.pick(this.apiConversations);
        if (conversationId === undefined) return;
        input.path = `/api/conversations/${conversationId}/messages`;
        input.body = { text: `${id} ${this.words(this.random.int(2, 5))}`, idempotencyKey: input.key };
        await this.callApiFor(input);
      })(),
    );
    return id;
  }

  /**
   * A proactive message (`POST /api/send`) to a Telegram DM of either bot, through the account
   * named (the channel has two), through the outbox: shown exactly once, or left ambiguous for the
   * operator. Its text is marked `a-k…`. Returns the id.
   */
  postApiSend(): string {
    const id = this.id("k");
    const place = this.cast.byName(
      this.random.pick(["tg-dm-alice", "tg-dm-bob", "sup-dm-alice", "sup-dm-bob"]),
    );
    const input: ApiInput = {
      id,
      kind: "send",
      key: `chaos-${id}`,
      path: "/api/send",
      body: {
        channel: "telegram",
        account: place.account,
        target: place.chat.split(":")[1],
        text: `a-${id} proactive ${this.words(3)}`,
        idempotencyKey: `chaos-${id}`,
      },
      chat: place.chat,
      answers: [],
      errors: [],
    };
    this.api.push(input);
    this.pendingCalls.push(this.callApiFor(input));
    return id;
  }

  /** A client repeats an API call made earlier (after a timeout, or a restart): the same key and body. */
  repeatApi(): void {
    const done = this.api.filter((a) => a.answers.length > 0);
    if (done.length === 0) return;
    const input = this.random.pick(done);
    this.duplicates.apiRepeats += 1;
    this.pendingCalls.push(this.callApiFor(input));
  }

  private async callApiFor(input: ApiInput): Promise<void> {
    if (!input.path || !input.body) return;
    const answer = await this.callApi(input.path, input.body);
    if ("error" in answer) input.errors.push(String(answer.error));
    else input.answers.push(answer as ApiInput["answers"][number]);
  }

  /**
   * POSTs as the operator until the gateway answers 2xx (or 4xx: a client error, returned as
   * `{ error }`), retrying on no answer and 5xx for up to 120 s (kills and restarts).
   */
  private async callApi(path: string, body: unknown): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 120_000;
    let last = "no gateway ran";
    while (Date.now() < deadline) {
      const url = this.supervisor.url;
      if (!url) {
        await Bun.sleep(200);
        continue;
      }
      try {
        const response = await fetch(`${url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await response.text();
        if (response.ok) return JSON.parse(text) as Record<string, unknown>;
        last = `${response.status} ${text.slice(0, 200)}`;
        if (response.status < 500) return { error: last };
      } catch (error) {
        last = String((error as Error).message);
      }
      await Bun.sleep(300);
    }
    return { error: `no answer within 120 s (last: ${last})` };
  }

  /**
   * Dave (unlisted) writes; once his code shows, his first update is delivered again (no second
   * code), the operator approves the code through the API (retried while the gateway is down), then
   * approves it again (a second redemption must change nothing); then he writes and is answered.
   * Only one episode: once approved, Dave is allowed for good.
   */
  private async pairingEpisode(): Promise<void> {
    if (this.pairings.length > 0) return;
    const place = this.cast.pairer;
    const userId = Number(place.chat.split(":")[1]);
    const episode = { userId, redemptions: [] as string[] };
    this.pairings.push(episode);
    const id = this.id("i");
    const first = place.post("dave", `${id} ${this.words(3)}`, false);
    this.record(id, place, first, "ignored");
    if (this.random.chance(this.options.duplicateRate)) {
      place.replay(first);
      this.duplicates.immediate += 1;
    }
    // A kill while the code's message is sent leaves it ambiguous; the watching operator sends it
    // again 15 to 25 s later, and another kill can land on that send too: give the code time.
    const deadline = Date.now() + 100_000;
    let code: string | undefined;
    while (!code && Date.now() < deadline) {
      code = codesIn(this.peers.telegram, userId)[0];
      if (!code) await Bun.sleep(200);
    }
    if (!code) return; // checkPairings reports the missing approval
    // The operator keeps trying while gateways die and start (each start takes seconds on a busy machine).
    const approveBy = Date.now() + 180_000;
    // Delivered again before the approval: it must issue no second code. (A redelivery after the
    // approval, which kills cause, must stay a duplicate: checked by the pairing invariant.)
    place.replay(first);
    this.duplicates.replays += 1;
    for (let redemption = 0; redemption < 2; ) {
      const url = this.supervisor.url;
      if (!url) {
        await Bun.sleep(200);
        continue;
      }
      try {
        episode.redemptions.push(await approvePairing({ url, token: OPERATOR_TOKEN }, code));
        redemption += 1;
      } catch {
        // The gateway died during the call: ask again (an approval that did commit then answers
        // "already approved").
        episode.redemptions.push("unknown");
        await Bun.sleep(500);
        if (Date.now() > approveBy) return;
      }
    }
    this.postAnswerable(place);
  }

  /**
   * Carol writes once or twice, then `/forget confirm` (duplicated at times) while an answer may
   * still be on its way; everything she wrote before it is to be purged. Once "Done" shows (or 30 s
   * passed) she writes again, which must be answered in the fresh conversation.
   */
  private async forgetEpisode(): Promise<void> {
    const place = this.cast.forgetter;
    const chatId = Number(place.chat.split(":")[1]);
    const done = () =>
      this.peers.telegram
        .messages(chatId)
        .filter((m) => m.fromBot && m.visibleText.includes("I deleted this conversation")).length;
    for (let k = this.random.int(1, 2); k > 0; k -= 1) {
      const id = this.id("f");
      this.script(id);
      this.record(
        id,
        place,
        place.post("carol", `${id} ${this.words(this.random.int(2, 5))}`, false),
        "purged",
      );
    }
    await Bun.sleep(this.random.int(0, 1_500));
    const doneBefore = done();
    const atMs = Date.now();
    for (const input of this.sent) {
      if (input.place !== place.name || input.forgetAtMs !== undefined) continue;
      input.expect = "purged";
      input.forgetAtMs = atMs;
    }
    const updateKey = place.post("carol", "/forget confirm", false);
    this.forgets.push({ updateKey, atMs });
    if (this.random.chance(this.options.duplicateRate)) {
      place.replay(updateKey);
      this.duplicates.immediate += 1;
    }
    const deadline = Date.now() + 30_000;
    while (done() === doneBefore && Date.now() < deadline) await Bun.sleep(200);
    if (done() > doneBefore) this.postAnswerable(place);
  }

  /** `/in 2s <id> …` in a DM (default: a random one); the scheduled answer is scripted like any other. */
  postSchedule(at?: Place): void {
    const id = this.id("s");
    const place =
      at ??
      this.cast.byName(
        this.random.pick(["tg-dm-alice", "dc-dm-bob", "wa-dm-bob", "mx-dm-alice", "sup-dm-bob"]),
      );
    this.script(id);
    const updateKey = place.post(place.speakers[0]!, `/in 2s ${id} stretch your legs`, false);
    this.record(id, place, updateKey, "schedule");
  }

  /** Redelivers Discord messages posted shortly before the gateway died or while it was down. */
  async redeliverDiscordAtRisk(deathAtMs: number): Promise<void> {
    const connected = Date.now() + 10_000;
    while (this.peers.discord.connectedClients === 0 && Date.now() < connected) await Bun.sleep(50);
    const ids: string[] = [];
    for (const input of this.sent) {
      if (input.channel !== "discord" || input.offeredAtMs < deathAtMs - DISCORD_AT_RISK_MS) continue;
      this.cast.byName(input.place).replay(input.updateKey);
      // A process killed soon after this copy arrived may have lost it too: it stays at risk.
      input.offeredAtMs = Date.now();
      this.duplicates.discordRedeliveries += 1;
      ids.push(input.id);
    }
    this.redeliveries.push({ atMs: Date.now(), sinceMs: deathAtMs, ids });
  }

  /**
   * An answerable message in `place` (default: a random one); `duplicate` forces (true) or forbids
   * (false) an immediate second delivery, else the dice decide. `pace` slows its streamed answer
   * (for an answer still streaming when the next message or a /stop arrives). Returns its id.
   */
  postAnswerable(
    place: Place = this.random.pick(this.roomy(this.cast.places)),
    options: { duplicate?: boolean; pace?: Pace } = {},
  ): string {
    const id = this.id("q");
    const speaker = this.random.pick(place.speakers);
    this.script(id, options.pace);
    const updateKey = place.post(speaker, `${id} ${this.words(this.random.int(2, 6))}`, place.needsMention);
    this.record(id, place, updateKey, "answer");
    if (options.duplicate ?? this.random.chance(this.options.duplicateRate)) {
      place.replay(updateKey);
      this.duplicates.immediate += 1;
    }
    return id;
  }

  /** The platform delivers an update posted earlier again (a replay, long after the first delivery). */
  replay(id: string): void {
    const input = this.sent.find((s) => s.id === id);
    if (!input) throw new Error(`no input ${id} to replay`);
    this.cast.byName(input.place).replay(input.updateKey);
    this.duplicates.replays += 1;
  }

  /**
   * `/stop` or `/export` in `place`, marked with a `c…` id (commands ignore what follows them);
   * answered by the gateway itself. Returns the id.
   */
  postCommand(name: "stop" | "export", place: Place): string {
    const id = this.id("c");
    const updateKey = place.post(place.speakers[0]!, `/${name} ${id}`, false);
    this.record(id, place, updateKey, "command");
    this.commands.push({ id, name });
    return id;
  }

  /**
   * A message in a Telegram place (default: a random one) that the model answers with an MCP tool
   * call: `t` runs `ledger_slow_append` at once (long enough for a kill to land mid-call), `r` the
   * same tool declared idempotent (`retry_slow_append`), `p` calls `notes_append_note`, which waits
   * for the asker's button press: `decision` plans it (the dice decide when absent; `expire` is never
   * pressed). The answer after the tool result starts `a-<id>` and quotes the result. Returns the id.
   */
  postToolCall(
    kind: "t" | "r" | "p",
    options: { place?: Place; decision?: PlannedDecision; ms?: number } = {},
  ): string {
    const place =
      options.place ?? this.random.pick(this.roomy(this.cast.places.filter((p) => p.press !== undefined)));
    const id = this.id(kind);
    const speaker = this.random.pick(place.speakers);
    this.peers.llm.addRules([
      {
        match: { lastUserContains: id, lastRole: "user" },
        reply:
          kind === "p"
            ? { kind: "tool-call", toolName: "notes_append_note", input: { text: id } }
            : {
                kind: "tool-call",
                toolName: kind === "t" ? "ledger_slow_append" : "retry_slow_append",
                input: { text: id, ms: options.ms ?? this.random.int(100, 2_500) },
              },
      },
      {
        match: { lastToolInputContains: `"${id}"`, lastRole: "tool" },
        reply: {
          kind: "text",
          text: `a-${id} done: {{lastToolResult}}`,
          chunks: this.random.int(2, 3),
          chunkDelayMs: this.random.int(20, 100),
        },
      },
    ]);
    const updateKey = place.post(speaker, `${id} ${this.words(this.random.int(2, 5))}`, place.needsMention);
    this.record(id, place, updateKey, "answer", speaker);
    if (kind === "p" && options.decision !== "expire")
      this.awaitingPress.set(id, { place, speaker, decision: options.decision });
    if (options.decision === undefined && this.random.chance(this.options.duplicateRate)) {
      place.replay(updateKey);
      this.duplicates.immediate += 1;
    }
    return id;
  }

  /**
   * A message (`g…`, in a Telegram queue place: no later message supersedes the run that waits for
   * the result) that the model answers with `spawn_agent` for the child `helper`, whose task is
   * `h…` (same number). The child answers `y…`; its result comes back to the conversation as an
   * input, answered `a-y…`. With `wait: false` the parent also answers the spawn itself, `a-g…`.
   * Returns the id.
   */
  postSpawn(options: { wait?: boolean; place?: Place } = {}): string {
    const place =
      options.place ??
      this.random.pick(
        this.roomy(this.cast.places.filter((p) => p.press !== undefined && p.policy === "queue")),
      );
    const wait = options.wait ?? this.random.chance(0.5);
    const id = this.id("g");
    const childId = `h${id.slice(1)}`;
    const resultId = `y${id.slice(1)}`;
    const speaker = this.random.pick(place.speakers);
    this.peers.llm.addRules([
      // First: the result's input quotes the task (childId) too.
      {
        match: { lastUserContains: resultId, lastRole: "user" },
        reply: { kind: "text", text: `a-${resultId} ${this.words(this.random.int(3, 8))}`, chunks: 2 },
      },
      {
        match: { lastUserContains: childId, lastRole: "user" },
        reply: {
          kind: "text",
          text: `${resultId} ${this.words(this.random.int(3, 8))}`,
          chunks: this.random.int(2, 4),
          chunkDelayMs: this.random.int(20, 100),
        },
      },
      {
        match: { lastUserContains: id, lastRole: "user" },
        reply: {
          kind: "tool-call",
          toolName: "spawn_agent",
          input: { agent: "helper", task: `${childId} ${this.words(3)}`, wait },
        },
      },
      {
        match: { lastToolInputContains: childId, lastRole: "tool" },
        reply: { kind: "text", text: `a-${id} started ${this.words(2)}`, chunks: 2 },
      },
    ]);
    const updateKey = place.post(speaker, `${id} ${this.words(this.random.int(2, 4))}`, place.needsMention);
    this.record(id, place, updateKey, "spawn", speaker);
    this.spawns.push({ id, childId, resultId, wait, chat: place.chat });
    if (options.place === undefined && this.random.chance(this.options.duplicateRate)) {
      place.replay(updateKey);
      this.duplicates.immediate += 1;
    }
    return id;
  }

  /**
   * Edits and deletes of queued messages in `place`: while the answer to `slow` streams, the speaker
   * writes two messages (queued behind it), edits the first (`q…` becomes `e…`, same number) and
   * deletes the second where the platform reports deletes, once `admitted` says both were admitted;
   * each edit and delete is delivered twice.
   * The edit must be answered once, as corrected (`a-e…`), never as first written, and the deleted
   * message never. Resolves once both are posted.
   */
  async correctAndWithdraw(
    place: Place,
    slow: string,
    admitted: (updateKeys: string[]) => Promise<boolean>,
  ): Promise<void> {
    const speaker = place.speakers[0]!;
    await waitFor(() => this.peers.llm.requests().some((r) => r.lastUserText.includes(slow)), 30_000);
    const edited = this.id("q");
    const correctedId = `e${edited.slice(1)}`;
    this.script(edited);
    this.script(correctedId);
    const editedKey = place.post(speaker, `${edited} ${this.words(3)}`, place.needsMention);
    this.record(edited, place, editedKey, "edited", speaker);
    this.sent.at(-1)!.correctedTo = correctedId;
    let deletedKey: string | undefined;
    if (place.remove) {
      const deleted = this.id("q");
      this.script(deleted);
      deletedKey = place.post(speaker, `${deleted} ${this.words(3)}`, place.needsMention);
      this.record(deleted, place, deletedKey, "withdrawn", speaker);
    }
    // As a person would, a moment later: once the gateway queued them behind the streaming answer.
    await waitFor(() => admitted(deletedKey ? [editedKey, deletedKey] : [editedKey]), 30_000);
    place.edit?.(speaker, editedKey, `${correctedId} ${this.words(3)}`).again();
    if (deletedKey) place.remove?.(speaker, deletedKey).again();
    this.duplicates.editsAndDeletes += deletedKey ? 2 : 1;
  }

  /**
   * A message in a Telegram or Matrix queue place (their platforms redeliver what a death cut
   * short) that the speaker edits 0 to 1.5 s later (`q…` becomes `e…`), whatever the gateway is
   * doing: the edit may find it queued (answered as corrected), running (both answered, under
   * `queue`) or answered (the edit ignored). Returns the id.
   */
  postAndEdit(): string {
    const place = this.random.pick(
      this.cast.places.filter((p) => p.edit && p.policy === "queue" && p.channel !== "discord"),
    );
    const speaker = place.speakers[0]!;
    const id = this.id("q");
    const correctedId = `e${id.slice(1)}`;
    this.script(id);
    this.script(correctedId);
    const updateKey = place.post(speaker, `${id} ${this.words(3)}`, place.needsMention);
    this.record(id, place, updateKey, "edited", speaker);
    const input = this.sent.at(-1)!;
    input.correctedTo = correctedId;
    input.editedAnyTime = true;
    this.duplicates.editsAndDeletes += 1;
    const delayMs = this.random.int(0, 1_500);
    const words = this.words(3);
    this.pendingCalls.push(
      Bun.sleep(delayMs).then(() => void place.edit?.(speaker, updateKey, `${correctedId} ${words}`)),
    );
    return id;
  }

  /** Approval calls still waiting for their press (planned or not). */
  get unpressed(): number {
    return this.awaitingPress.size;
  }

  /**
   * The askers press the approval prompts that have appeared: as planned, else Approve (3 in 4) or
   * Deny, sometimes twice, and the platform delivers some presses again, at once or later.
   */
  pressPrompts(): void {
    for (const [id, { place, speaker, decision }] of this.awaitingPress) {
      const chatId = Number(place.chat.split(":")[1]);
      const prompt = (place.telegram ?? this.peers.telegram)
        .messages(chatId)
        .find(
          (m) =>
            m.fromBot && m.buttons && m.visibleText.includes("Approval needed") && m.visibleText.includes(id),
        );
      if (!prompt) continue;
      const label =
        decision === undefined
          ? this.random.chance(0.75)
            ? "Approve"
            : "Deny"
          : decision === "deny"
            ? "Deny"
            : "Approve";
      const updateKey = place.press?.(speaker, prompt.messageId, label);
      if (!updateKey) continue;
      this.awaitingPress.delete(id);
      this.presses[label === "Approve" ? "approve" : "deny"] += 1;
      this.pressed.push({ place, updateKey });
      const again = decision === undefined ? this.random.chance(0.15) : decision === "approve-twice";
      if (again && place.press?.(speaker, prompt.messageId, label)) this.presses.again += 1;
      if (decision === undefined && this.random.chance(this.options.duplicateRate)) {
        place.replay(updateKey);
        this.presses.replays += 1;
      }
      if (
        decision === undefined &&
        this.random.chance(this.options.replayRate * 2) &&
        this.pressed.length > 1
      ) {
        const old = this.random.pick(this.pressed);
        old.place.replay(old.updateKey);
        this.presses.replays += 1;
      }
    }
  }

  /** Media messages posted: the id, the file the gateway must fetch, and the bot that serves it. */
  readonly media: Array<{ id: string; kind: "photo" | "voice"; fileId: string; bot: TelegramEmulator }> = [];
  private photoBytes: Uint8Array | null = null;

  /**
   * A photo (a small JPEG) or a voice note (an Ogg Opus header) captioned `m…` (the dice choose
   * the kind and the place when not given): the model must get the image part or the transcript,
   * and answer once. Returns the id.
   */
  async postMedia(kind?: "photo" | "voice", at?: Place): Promise<string> {
    const place =
      at ?? this.random.pick(this.roomy(this.cast.places.filter((p) => p.postMedia && !p.needsMention)));
    const id = this.id("m");
    const chosen = kind ?? (this.random.chance(0.5) ? "photo" : "voice");
    const speaker = this.random.pick(place.speakers);
    this.script(id);
    this.photoBytes ??= new Uint8Array(
      await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 20, g: 120, b: 200 } } })
        .jpeg()
        .toBuffer(),
    );
    const bytes = chosen === "photo" ? this.photoBytes : oggOpus(2_000 + this.random.int(0, 500));
    const posted = place.postMedia!(speaker, `${id} ${this.words(2)}`, {
      kind: chosen,
      bytes,
      name: `file-${id}`,
    });
    this.record(id, place, posted.updateKey, "answer", speaker);
    this.media.push({ id, kind: chosen, fileId: posted.fileId, bot: place.telegram ?? this.peers.telegram });
    if (kind === undefined && this.random.chance(this.options.duplicateRate)) {
      place.replay(posted.updateKey);
      this.duplicates.immediate += 1;
    }
    return id;
  }

  /**
   * Group chatter without a mention, or a DM from someone no allowlist names (`where` chooses; `at`
   * names the place instead of the dice).
   */
  postIgnorable(
    where: "group" | "stranger" = this.random.chance(0.5) ? "group" : "stranger",
    at?: Place,
  ): void {
    const id = this.id("i");
    const gated = this.cast.places.filter((p) => p.needsMention);
    const place =
      at ??
      (where === "group"
        ? this.random.pick(gated)
        : this.random.pick([
            this.cast.stranger.telegramDm,
            this.cast.stranger.discordDm,
            this.cast.stranger.whatsappDm,
            this.cast.stranger.matrixDm,
          ]));
    const updateKey = place.post(this.random.pick(place.speakers), `${id} ${this.words(3)}`, false);
    this.record(id, place, updateKey, "ignored");
  }

  /**
   * The model's answer to `id`: marked `a-<id>`, streamed in a few paced chunks (short pauses: a
   * kill at `step.streaming` needs a stream, not a slow one).
   */
  private script(
    id: string,
    pace: Pace = { chunks: this.random.int(2, 5), chunkDelayMs: this.random.int(20, 150) },
  ): void {
    this.peers.llm.addRules([
      {
        // Only right after the user's message: a run continued after a tool result whose last
        // user message is this one answers that result (postToolCall's rules).
        match: { lastUserContains: id, lastRole: "user" },
        reply: {
          kind: "text",
          text: `a-${id} ${this.words(this.random.int(4, 14))}`,
          ...pace,
        },
      },
    ]);
  }

  /**
   * The places among `places` with room: a Telegram chat, where the gateway paces its answers to
   * the platform's limits, has none once it got TELEGRAM_POSTS_PER_MINUTE posts in the last minute,
   * so at high rates its answers keep up. All of them when none has room.
   */
  private roomy(places: readonly Place[]): readonly Place[] {
    const sinceMs = Date.now() - 60_000;
    const full = (place: Place) => {
      if (place.channel !== "telegram") return false;
      const posts = (this.postTimes.get(place.chat) ?? []).filter((atMs) => atMs > sinceMs);
      this.postTimes.set(place.chat, posts);
      const group = /^tg[^:]*:-/.test(place.chat);
      return posts.length >= TELEGRAM_POSTS_PER_MINUTE[group ? "group" : "chat"];
    };
    const roomy = places.filter((p) => !full(p));
    return roomy.length > 0 ? roomy : places;
  }

  private record(
    id: string,
    place: Place,
    updateKey: string,
    expect: SentInput["expect"],
    speaker?: string,
  ): void {
    this.postTimes.set(place.chat, [...(this.postTimes.get(place.chat) ?? []), Date.now()]);
    this.sent.push({
      ...(speaker ? { speaker } : {}),
      ...(place.account ? { account: place.account } : {}),
      id,
      place: place.name,
      channel: place.channel,
      updateKey,
      chat: place.chat,
      expect,
      ordered: place.policy === "queue",
      sentAtMs: Date.now(),
      offeredAtMs: Date.now(),
    });
  }

  private id(prefix: "q" | "s" | "i" | "t" | "r" | "p" | "f" | "m" | "c" | "g" | "k"): string {
    const id = `${prefix}${String(this.nextId).padStart(5, "0")}`;
    this.nextId += 1;
    return id;
  }

  private words(count: number): string {
    const vocabulary = [
      "alpha",
      "bravo",
      "charlie",
      "delta",
      "echo",
      "foxtrot",
      "golf",
      "hotel",
      "india",
      "juliet",
    ];
    return Array.from({ length: count }, () => this.random.pick(vocabulary)).join(" ");
  }
}
