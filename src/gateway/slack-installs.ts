/**
 * The Slack app installed into many workspaces (SLACK_CLIENT_ID): its installations' adapters are
 * added to the gateway's while it runs (channels/slack/workspaces.ts), each started like any
 * channel's; an uninstall takes its adapter away and its queued replies fail naming the uninstall.
 */
import type { CommandMenu } from "../../channels/commands.ts";
import type { SlackInstallsConfig } from "../../channels/slack/oauth.ts";
import type { SlackWorkspaces } from "../../channels/slack/workspaces.ts";
import type { ChannelAdapter, ChannelCapabilities } from "../../channels/types.ts";
import type { StoreBackend } from "../store/backend.ts";
import type { DatabaseConfig } from "../store/open-backend.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { loadSecretBox } from "../util/secret-box.ts";

export interface SlackInstallsDeps {
  installs: SlackInstallsConfig;
  database: DatabaseConfig;
  stores: StoreBackend;
  clock: Clock;
  logger: Logger;
  commands?: CommandMenu;
  /** Adds the slot's adapter to the gateway's and starts it. */
  attach(slot: string, make: () => ChannelAdapter): Promise<void>;
  detach(slot: string): Promise<void>;
  adapterInSlot(slot: string): ChannelAdapter | undefined;
  /** After an uninstall (the outbox fails that workspace's queued replies now). */
  uninstalled(): void;
}

/**
 * The key that seals the tokens: SWITCHBOARD_SECRET_KEY, else `<database file>.key` (created once,
 * mode 0600) on SQLite; PostgreSQL needs the variable (every gateway on the database shares it).
 */
export function slackSecretKeyFile(database: DatabaseConfig): string | null {
  return database.engine === "sqlite" ? `${database.path}.key` : null;
}

export function createSlackInstalls(deps: SlackInstallsDeps): {
  workspaces: SlackWorkspaces;
  capabilities: ChannelCapabilities;
} {
  const { SlackWorkspaces: Workspaces } =
    require("../../channels/slack/workspaces.ts") as typeof import("../../channels/slack/workspaces.ts");
  const { SLACK_CAPABILITIES } =
    require("../../channels/slack/adapter.ts") as typeof import("../../channels/slack/adapter.ts");
  const box = loadSecretBox(deps.installs.secretKey, slackSecretKeyFile(deps.database));
  if (box.source.kind === "file" && box.source.created)
    deps.logger.warn("slack.secret_key_created", {
      path: box.source.path,
      hint: "this file seals the Slack installations' tokens: back it up with the database (without it they must be installed again), or set SWITCHBOARD_SECRET_KEY",
    });
  const workspaces = new Workspaces({
    config: deps.installs,
    store: deps.stores.slackInstallations,
    box,
    clock: deps.clock,
    logger: deps.logger.child({ component: "slack-installs" }),
    ...(deps.commands ? { commands: deps.commands } : {}),
    attach: deps.attach,
    detach: deps.detach,
    uninstalled: () => deps.uninstalled(),
    refreshCheckMs: deps.installs.refreshCheckMs,
  });
  workspaces.adapterInSlot = deps.adapterInSlot;
  return { workspaces, capabilities: SLACK_CAPABILITIES };
}
