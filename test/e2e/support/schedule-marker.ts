import { privateChat, type TelegramEmulator } from "../../emulators/telegram/index.ts";

/** The prompt of the marker schedule; its echo shows that the scheduler has passed `afterMs`. */
export const MARKER_PROMPT = "marker after the slot";

/**
 * Proves that the scheduler has run a tick at or after `afterMs` (a paused schedule's slot, say)
 * without sleeping past it: schedules a one-off with `/in` for a whole second after `afterMs`
 * in `from`'s Telegram DM and waits for its scheduled answer. The tick that took the marker listed
 * everything due by then, so a schedule that should not fire would have been claimed in it.
 */
export async function passScheduleSlot(
  telegram: TelegramEmulator,
  from: Parameters<typeof privateChat>[0],
  afterMs: number,
): Promise<void> {
  const inSeconds = Math.ceil((afterMs - Date.now()) / 1000) + 1;
  telegram.incoming({ chat: privateChat(from), from, text: `/in ${inSeconds}s ${MARKER_PROMPT}` });
  await telegram.waitForMessage(
    from.id,
    (m) => m.fromBot && m.visibleText.startsWith("echo:") && m.visibleText.includes(MARKER_PROMPT),
    15_000 + inSeconds * 1000,
  );
}
