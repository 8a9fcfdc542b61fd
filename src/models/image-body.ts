import { AsyncLocalStorage } from "node:async_hooks";
import { SwitchboardError } from "../errors.ts";
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Prompt,
} from "./language-model-v4.ts";

/*
 * A photo's base64 never becomes part of one big JavaScript string. Both HTTP providers serialise
 * an image given as bytes as `"url":"data:<type>;base64,<base64>"` inside one JSON.stringify'd
 * body; for a ~2 MB photo that is the base64 string in the provider's request object, the body
 * string (twice the size when any character of it is above U+00FF) and its UTF-8 copy.
 *
 * Instead the model is handed a small random stand-in for each image's bytes, the provider
 * serialises the stand-in's base64 (a marker), and the provider's fetch swaps each marker for the
 * real base64 while building the body as a Blob of parts. Which markers a call expects travels
 * with the call (AsyncLocalStorage), so concurrent runs never see each other's images and nothing
 * is kept once a call is over. Every expected marker must appear exactly once, in a data URL, or
 * the request is refused: a provider that serialised differently must not send a model garbage.
 */

/** Bytes of a stand-in: 24 random bytes are 32 base64 characters without padding. */
const STAND_IN_BYTES = 24;

interface Lease {
  /** Marker (the stand-in's base64) → the real image bytes. */
  images: Map<string, Uint8Array>;
}

const current = new AsyncLocalStorage<Lease>();

/** Replaces each inline image's bytes with a fresh stand-in; `images` maps the markers back. */
export function standInImages(prompt: LanguageModelV4Prompt): {
  prompt: LanguageModelV4Prompt;
  lease: Lease;
} {
  const images = new Map<string, Uint8Array>();
  const swapped = prompt.map((message) => {
    if (message.role !== "user") return message;
    const content = message.content.map((part) => {
      if (part.type !== "file" || !part.mediaType.startsWith("image/")) return part;
      if (part.data.type !== "data" || !(part.data.data instanceof Uint8Array)) return part;
      const standIn = crypto.getRandomValues(new Uint8Array(STAND_IN_BYTES));
      images.set(base64(standIn), part.data.data);
      return { ...part, data: { type: "data" as const, data: standIn } };
    });
    return { ...message, content };
  });
  return { prompt: swapped, lease: { images } };
}

/** The model, with inline images travelling as markers until its provider's fetch builds the body. */
export function withImageBodies(model: LanguageModelV4): LanguageModelV4 {
  const call = <T>(
    options: LanguageModelV4CallOptions,
    run: (options: LanguageModelV4CallOptions) => T,
  ): T => {
    const { prompt, lease } = standInImages(options.prompt);
    if (lease.images.size === 0) return run(options);
    return current.run(lease, () => run({ ...options, prompt }));
  };
  return {
    specificationVersion: model.specificationVersion,
    get provider() {
      return model.provider;
    },
    get modelId() {
      return model.modelId;
    },
    get supportedUrls() {
      return model.supportedUrls;
    },
    doGenerate: (options) => call(options, (o) => model.doGenerate(o)),
    doStream: (options) => call(options, (o) => model.doStream(o)),
  };
}

/** A fetch for `provider` that puts the real images of the current call in place of their markers. */
export function imageBodyFetch(provider: string, inner: typeof fetch = fetch): typeof fetch {
  const wrapped = (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const lease = current.getStore();
    if (!lease || typeof init?.body !== "string") return inner(input, init);
    return inner(input, { ...init, body: assembleBody(provider, init.body, lease.images) });
  };
  return Object.assign(wrapped, { preconnect: inner.preconnect }) as typeof fetch;
}

const PREFIX = ";base64,";

/**
 * The request body with each marker replaced by its image's base64: the JSON text around the
 * markers and the images' base64 as separate parts, so the whole body is never one string.
 * Throws when a marker is missing, repeated, or not the whole base64 of a data URL.
 */
export function assembleBody(provider: string, body: string, images: ReadonlyMap<string, Uint8Array>): Blob {
  const found: { at: number; marker: string }[] = [];
  for (const marker of images.keys()) {
    const at = body.indexOf(marker);
    const valid =
      at >= PREFIX.length &&
      body.startsWith(PREFIX, at - PREFIX.length) &&
      body[at + marker.length] === '"' &&
      body.indexOf(marker, at + 1) === -1;
    if (!valid) {
      throw new SwitchboardError(
        "provider_failed",
        `The ${provider} provider did not put an image into its request as one base64 data URL, so ` +
          "the image cannot be sent (switchboard sends the base64 separately from the JSON). " +
          "Pin the provider package to a version src/models/image-body.ts was checked against, or " +
          "remove withImageBodies for this provider in src/models/registry.ts.",
      );
    }
    found.push({ at, marker });
  }
  found.sort((a, b) => a.at - b.at);
  const parts: BlobPart[] = [];
  let from = 0;
  for (const { at, marker } of found) {
    parts.push(body.slice(from, at), base64(images.get(marker) as Uint8Array));
    from = at + marker.length;
  }
  parts.push(body.slice(from));
  return new Blob(parts);
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}
