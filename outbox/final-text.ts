import type { TerminalRunState } from "../src/runtime/types.ts";

/** Appended to an interrupted answer so the reader sees it was cut short on purpose. */
export const STOPPED_MARK = " (stopped)";

/**
 * The text the chat must finally show for a run that ended in `state` with canonical `text`.
 * Both the terminal commit (finalising the outbox record) and a live stream use it, so a stream
 * finished live and one finished after a crash end identical. Empty: nothing is shown (a
 * superseded run's partial preview is deleted).
 */
export function finalAnswerMarkdown(state: TerminalRunState, text: string): string {
  switch (state) {
    case "superseded":
      return "";
    case "interrupted":
      return text.trim() === "" ? STOPPED_MARK.trim() : `${text.trimEnd()}${STOPPED_MARK}`;
    default:
      return text;
  }
}
