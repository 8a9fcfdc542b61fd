import type { ChannelAdapter } from "../../channels/types.ts";
import { routeToAccount } from "../../outbox/adapter-route.ts";
import { SwitchboardError } from "../errors.ts";
import { createMediaInputs, DEFAULT_MEDIA_LIMITS } from "../media/inputs.ts";
import { openAiCompatibleTranscriptionModel, transcribeAudio } from "../models/transcription.ts";
import { readRunContext } from "../run-context.ts";
import { defaultModelInputs, type MediaInputs } from "../runtime/media.ts";
import type { StoreBackend } from "../store/backend.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import type { GatewayConfig } from "./config/index.ts";

/** The media pipeline: the channels' downloads into the blob store, scaled and transcribed for the model. */
export function gatewayMedia(
  config: GatewayConfig,
  deps: {
    stores: StoreBackend;
    adapters: ReadonlyMap<string, ChannelAdapter>;
    clock: Clock;
    logger: Logger;
    primarySpec: string;
  },
): MediaInputs {
  const { stores, adapters, clock } = deps;
  const transcriptionSpec = config.media.transcriptionModel;
  const baseUrl = config.modelEnv.OPENAI_COMPATIBLE_BASE_URL;
  const transcriptionModel =
    transcriptionSpec && baseUrl
      ? openAiCompatibleTranscriptionModel({
          baseUrl,
          modelId: transcriptionSpec.slice("openai-compatible:".length),
          ...(config.modelEnv.OPENAI_COMPATIBLE_API_KEY
            ? { apiKey: config.modelEnv.OPENAI_COMPATIBLE_API_KEY }
            : {}),
        })
      : null;
  return createMediaInputs({
    blobs: stores.blobs,
    clock,
    open: async (context, ref, signal) => {
      const run = readRunContext(context);
      // The file is fetched by the bot that received it (a file id means nothing to another bot).
      const adapter = run ? routeToAccount(adapters.values(), run.channel, run.account).adapter : null;
      if (!adapter?.openFile) {
        throw new SwitchboardError(
          "platform_rejected",
          `files sent through ${run?.channel ?? "this source"} cannot be fetched`,
        );
      }
      return await adapter.openFile(ref, signal);
    },
    accepts: config.media.modelInputs ?? defaultModelInputs(deps.primarySpec),
    limits: {
      ...DEFAULT_MEDIA_LIMITS,
      maxFileBytes: config.media.maxFileBytes,
      maxAudioSeconds: config.media.maxAudioSeconds,
    },
    logger: deps.logger.child({ component: "media" }),
    ...(transcriptionModel
      ? { transcribe: (audio, _type, signal) => transcribeAudio(transcriptionModel, audio, signal) }
      : {}),
    // One lane runs a conversation's runs one at a time, so this read-then-write does not race.
    conversationQuota: {
      limitBytes: config.media.maxConversationBytes,
      used: async (conversationId) =>
        (await stores.runtime.loadConversationSettings(conversationId)).mediaBytes ?? 0,
      add: async (conversationId, bytes) => {
        const used = (await stores.runtime.loadConversationSettings(conversationId)).mediaBytes ?? 0;
        await stores.runtime.saveConversationSettings(
          conversationId,
          { mediaBytes: used + bytes },
          clock.now(),
        );
      },
    },
    firstTranscriptionHint: async (conversationId) => {
      const settings = await stores.runtime.loadConversationSettings(conversationId);
      if (settings.transcriptionHinted) return false;
      await stores.runtime.saveConversationSettings(
        conversationId,
        { transcriptionHinted: true },
        clock.now(),
      );
      return true;
    },
  });
}
