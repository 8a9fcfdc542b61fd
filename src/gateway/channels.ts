import { apiModule } from "../../channels/api/module.ts";
import { discordModule } from "../../channels/discord/module.ts";
import { matrixModule } from "../../channels/matrix/module.ts";
import type { ChannelModule, PlatformChannel } from "../../channels/module.ts";
import { slackModule } from "../../channels/slack/module.ts";
import { telegramModule } from "../../channels/telegram/module.ts";
import { CHANNEL_NAMES } from "../../channels/types.ts";
import { whatsappModule } from "../../channels/whatsapp/module.ts";

/**
 * Every channel configured from the environment, by name: a new channel is one line here (and one
 * in CHANNEL_NAMES). The modules are light; each loads its platform's SDK only in `create()`, so a
 * gateway without Discord carries no discord.js (its ~10 MB of heap would be marked by every full
 * collection, for nothing).
 */
export const CHANNEL_MODULES: Readonly<Record<PlatformChannel, ChannelModule<unknown>>> = {
  telegram: telegramModule,
  discord: discordModule,
  slack: slackModule,
  whatsapp: whatsappModule,
  matrix: matrixModule,
  api: apiModule,
};

/** The registry's channels in CHANNEL_NAMES order (the web chat is not among them). */
export const PLATFORM_CHANNELS: readonly PlatformChannel[] = CHANNEL_NAMES.filter(
  (name): name is PlatformChannel => Object.hasOwn(CHANNEL_MODULES, name),
);

/** The variable listing who may talk to the bot on `channel`, e.g. TELEGRAM_ALLOWED_USERS. */
export function allowListVariable(channel: PlatformChannel): string {
  return `${channel.toUpperCase()}_ALLOWED_USERS`;
}
