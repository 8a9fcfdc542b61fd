import type { ChannelAdapter, ChannelName } from "../../channels/types.ts";
import type { StoreBackend } from "../store/backend.ts";
import type { Logger } from "../util/log.ts";

/** Most recently active targets a catch-up looks at; adapters bound it further. */
export const CATCH_UP_MAX_TARGETS = 200;

/**
 * For a platform that never redelivers what it sent while we were down: hands the adapter, per
 * target, the last message ingress recorded there. Ingress dedupe makes repeats harmless.
 */
export async function catchUpChannel(
  name: ChannelName,
  adapter: ChannelAdapter,
  stores: StoreBackend,
  logger: Logger,
): Promise<void> {
  if (!adapter.catchUp) return;
  const source = `${adapter.channel}:${adapter.account}`;
  try {
    const latest = await stores.runtime.latestIngressPerTarget(source, CATCH_UP_MAX_TARGETS);
    const report = await adapter.catchUp(
      latest.map((row) => ({ target: row.replyTarget, afterMessageId: row.updateKey })),
    );
    logger.info("channel.catch_up", { channel: name, ...report });
  } catch (error) {
    // Catch-up only narrows a gap the platform leaves; the channel itself is up and serving.
    logger.warn("channel.catch_up_failed", { channel: name, error });
  }
}
