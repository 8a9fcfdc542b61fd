/** Hostile and ordinary files for the media pipeline's tests. */
import sharp from "sharp";

/** An ELF executable's header (sniffed as application/x-elf). */
export const ELF = new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, ...new Array(200).fill(0)]);

/** A JPEG of one colour. */
export async function jpeg(width: number, height: number): Promise<Uint8Array> {
  const bytes = await sharp({ create: { width, height, channels: 3, background: { r: 10, g: 120, b: 240 } } })
    .jpeg()
    .toBuffer();
  return new Uint8Array(bytes);
}

/** A real PNG whose header claims `width`×`height` (CRC fixed), as a decompression bomb would. */
export async function pngClaiming(width: number, height: number): Promise<Uint8Array> {
  const png = new Uint8Array(
    await sharp({ create: { width: 8, height: 8, channels: 3, background: "#fff" } })
      .png()
      .toBuffer(),
  );
  const view = new DataView(png.buffer, png.byteOffset);
  view.setUint32(16, width);
  view.setUint32(20, height);
  view.setUint32(29, Bun.hash.crc32(png.subarray(12, 29)));
  return png;
}
