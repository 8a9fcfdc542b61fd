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
    case "timeout":
      return `${text.trimEnd()}${text.trim() === "" ? "" : "\n\n"}_(The model stopped responding; send your message again to retry.)_`;
    case "policy_stop":
      return `${text.trimEnd()}${text.trim() === "" ? "" : "\n\n"}_(Stopped: this answer reached its step limit.)_`;
    case "failed":
      return text.trim() === ""
        ? "_Sorry, I could not answer this time: the model failed. Please try again._"
        : `${text.trimEnd()}\n\n_(The answer was cut off by a model error.)_`;
    case "absorbed":
    case "cancelled":
      return "";
    default:
      return text;
  }
}
