/** What a chaos run does: its volumes, rates and timings (test/chaos/driver.ts runs it). */
import type { ChaosEngine } from "./database.ts";

export interface ChaosOptions {
  seed: number;
  /**
   * The traffic budget: the opening (every traffic kind and kill point once, as long as that takes)
   * and then random traffic until this much time has passed since the first gateway started.
   */
  trafficMs: number;
  /**
   * Random messages (answerable and ignorable), evenly spread over what the opening left of the
   * budget (at least 150 ms apart on average).
   */
  messages: number;
  /**
   * Random messages per second, across all places: when set, `messages` is derived from it and the
   * time the opening left of the budget (the opening's own messages come on top).
   */
  rate?: number;
  /**
   * When set, the random phase's deaths come about this often (an armed restart counts once):
   * `randomKills` and `killPointRounds` are derived from it, each kill point armed at least twice.
   */
  killEveryMs?: number;
  /** `/in 2s` schedules in the random traffic (the opening posts two), at random slots. */
  schedules: number;
  /** SIGKILLs at random moments in the random traffic, besides the armed restarts. */
  randomKills: number;
  /** How many times each named kill point is armed in the random traffic, besides the opening's. */
  killPointRounds: number;
  /** Probability that a platform call fails (429, 5xx, reset, hang), given a call just before it. */
  faultRate: number;
  /** Probability that a message is delivered twice right away. */
  duplicateRate: number;
  /** Probability, per message posted, that an older update is delivered again. */
  replayRate: number;
  /**
   * Probability that a message (in a Telegram place) makes the model call an MCP tool that runs at
   * once, and, apart, one that needs approval (the driver presses Approve or Deny). Default 0.
   */
  toolRate?: number;
  /**
   * Probability that a message (in a Telegram queue place) makes the model call `spawn_agent`, its
   * child's result coming back as an input (waited for or not, at random). Default 0.
   */
  spawnRate?: number;
  /**
   * Probability that a message goes through the conversation API instead: to an api conversation
   * (7 in 10) or as a proactive `POST /api/send` to a Telegram DM; earlier calls are repeated with
   * their key after restarts and at the replay rate. Default 0.
   */
  apiRate?: number;
  /**
   * Probability that an answerable message (in a Telegram or Matrix queue place) is edited 0 to
   * 1.5 s after it was posted, whatever state its answer is in. Default 0.
   */
  editRate?: number;
  /**
   * `/forget confirm` episodes in Carol's DM: she writes once or twice, forgets mid-conversation
   * (an answer may be streaming), then writes again in the fresh conversation. Default 0.
   */
  forgets?: number;
  /** `/stop` and `/export` (taking turns) in the random traffic, in Telegram places. Default 0. */
  commands?: number;
  /**
   * Pairing episodes: Dave, whom no allowlist names, writes, gets a code, the operator approves it
   * through the API (then once more: a second redemption), his first update is replayed, and he
   * writes again, to be answered. Default 0.
   */
  pairings?: number;
  /**
   * Probability that a message (in a Telegram place without a mention rule) is a captioned photo
   * or voice note, fetched through getFile; a voice note goes through the fake transcription
   * server. Default 0.
   */
  mediaRate?: number;
  /**
   * How long an armed gateway may run before the driver gives up on its kill point (it fires within
   * a second or two; this bounds a gateway that stopped making progress).
   */
  armedWindowMs: number;
  /** The gateway's `approvalTimeoutMs`: an approval request nobody decides expires after this (≥ 1000). */
  approvalTimeoutMs: number;
  settleTimeoutMs: number;
  /**
   * While the traffic runs, the operator handles ambiguous records this often, as someone watching
   * `outbox list --state ambiguous` would (each holds back its chat until decided). 0 or absent:
   * only once the traffic is over.
   */
  operatorEveryMs?: number;
  /** The gateway's database engine. Default SQLite; PostgreSQL gets a fresh database on the test server. */
  engine?: ChaosEngine;
  /**
   * PostgreSQL only: a second gateway always waits as a standby, and after each death it is the
   * standby that takes over (a new one then waits), instead of a fresh start.
   */
  standby?: boolean;
  log?: (line: string) => void;
}
