import { principalKey } from "../access/principal.ts";
import type { SearchScope } from "./store.ts";

/** Where a run is, as its context says: enough to name its user and its room. */
export interface RunPlace {
  channel: string;
  principalId: string;
  /** The account's configured name when it is a named one (absent: the channel's `default`). */
  accountName?: string;
  conversationKey: string;
  /** The room the adapter named for the conversation (a thread's channel); absent: the conversation is the room. */
  roomKey?: string;
}

/**
 * The scope of a run's history tools from its surface's `historyScope`; null for `off`. Decided
 * from the run's stored context only, never from anything the model says.
 */
export function historyScopeOf(
  setting: "user" | "channel" | "conversation" | "off" | undefined,
  conversationId: string,
  place: RunPlace,
): SearchScope | null {
  switch (setting ?? "user") {
    case "off":
      return null;
    case "conversation":
      return { kind: "conversation", conversationId };
    case "channel":
      return { kind: "room", room: `${place.channel}:${place.roomKey ?? place.conversationKey}` };
    case "user":
      return {
        kind: "principal",
        principal: principalKey(place.channel, place.accountName, place.principalId),
      };
  }
}
