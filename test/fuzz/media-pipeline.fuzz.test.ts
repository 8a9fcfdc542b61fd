/**
 * The image scaler on corrupted images: flipped bytes and truncations of real JPEG, PNG and WebP
 * files either scale to a valid image within bounds or throw an Error; never anything else.
 */
import { expect, test } from "bun:test";
import fc from "fast-check";
import sharp from "sharp";
import { MAX_IMAGE_SIDE, scaleForModel } from "../../src/media/image.ts";
import { sniffMediaType } from "../../src/media/sniff.ts";

const base = sharp({
  create: { width: 300, height: 200, channels: 4, background: { r: 1, g: 2, b: 3, alpha: 0.5 } },
});
const originals = await Promise.all([
  base.clone().jpeg().toBuffer(),
  base.clone().png().toBuffer(),
  base.clone().webp().toBuffer(),
]);

test("corrupted images scale within bounds or fail with an Error", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: originals.length - 1 }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 12 }),
      fc.option(fc.nat(), { nil: undefined }),
      async (which, flips, cut) => {
        const bytes = new Uint8Array(originals[which]!);
        for (const [at, value] of flips) bytes[at % bytes.byteLength] = value;
        const input = cut === undefined ? bytes : bytes.subarray(0, cut % bytes.byteLength);
        expect(typeof (await sniffMediaType(input.subarray(0, 4100)))).toBe("string");
        try {
          const scaled = await scaleForModel(input);
          const meta = await sharp(scaled.bytes).metadata();
          expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBeLessThanOrEqual(MAX_IMAGE_SIDE);
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
        }
      },
    ),
    { numRuns: 150 },
  );
}, 60_000);
