/** The `accounts` section of SWITCHBOARD_CONFIG as the file has it (loading is accounts.ts). */
import { z } from "zod";
import type { PlatformChannel } from "../../../channels/module.ts";
import { PLATFORM_CHANNELS } from "../channels.ts";

/** An account's name: it is part of a URL (`/telegram/webhook/<name>`), metrics labels and bindings. */
export const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** The `accounts` section as the file has it: channel → name → settings, references unexpanded. */
export const accountsSchema = z
  .partialRecord(
    z.enum(PLATFORM_CHANNELS as [PlatformChannel, ...PlatformChannel[]]),
    z.record(
      z.string().regex(ACCOUNT_NAME, "an account name is lowercase letters, digits, - and _ (e.g. personal)"),
      z.record(z.string(), z.unknown()),
    ),
  )
  .default({});

/** Each channel's account ids (as adapters report them) to their names; what binding facts match on. */
export type AccountNames = Partial<Record<PlatformChannel, Readonly<Record<string, string>>>>;
