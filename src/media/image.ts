import sharp from "sharp";

// Each image is decoded once: libvips' operation cache (up to 50 MB by default) would only hold
// pixels that are never asked for again.
sharp.cache(false);

/** Longest side of an image the model is shown. */
export const MAX_IMAGE_SIDE = 2048;
/** Decoding refuses images with more pixels than this (decompression bombs): 8K by 6K. */
export const MAX_INPUT_PIXELS = 50_000_000;

export interface ScaledImage {
  bytes: Uint8Array;
  mediaType: "image/jpeg" | "image/png";
  width: number;
  height: number;
}

/**
 * The image as the model sees it: oriented, at most MAX_IMAGE_SIDE on its long side, re-encoded
 * (PNG when it has transparency, else JPEG: libjpeg-turbo, not mozjpeg, whose trellis search took
 * seconds per photo on a loaded machine, and with the standard Huffman tables: optimised ones
 * cost a second pass over the coefficients, 30-45 ms of a 2048 px photo, to save about 4% of its
 * bytes; see docs/benchmarks.md, Media). Throws on a corrupt or truncated image and on one over
 * MAX_INPUT_PIXELS, before decoding its pixels.
 */
export async function scaleForModel(
  input: Uint8Array | string,
  maxInputPixels = MAX_INPUT_PIXELS,
): Promise<ScaledImage> {
  const image = sharp(input, { limitInputPixels: maxInputPixels, failOn: "error" });
  const tooMany = `the image has more than the ${maxInputPixels} pixels allowed`;
  const meta = await image.metadata().catch((error: unknown) => {
    // sharp reads the header only, and refuses a pixel bomb from it.
    throw /pixel limit/i.test(String(error)) ? new Error(tooMany) : error;
  });
  if (meta.width === undefined || meta.height === undefined) throw new Error("the image has no dimensions");
  if (meta.width * meta.height > maxInputPixels) {
    throw new Error(
      `the image is ${meta.width}×${meta.height} pixels, more than the ${maxInputPixels} pixels allowed`,
    );
  }
  const pipeline = image
    .autoOrient()
    .resize({ width: MAX_IMAGE_SIDE, height: MAX_IMAGE_SIDE, fit: "inside", withoutEnlargement: true });
  const { data, info } = meta.hasAlpha
    ? await pipeline.png().toBuffer({ resolveWithObject: true })
    : await pipeline.jpeg({ quality: 85, optimiseCoding: false }).toBuffer({ resolveWithObject: true });
  return {
    bytes: new Uint8Array(data),
    mediaType: meta.hasAlpha ? "image/png" : "image/jpeg",
    width: info.width,
    height: info.height,
  };
}
