/**
 * A tiny PNG decoder (8-bit RGB/RGBA, non-interlaced: what Chromium's screenshots are), so tests
 * can check what a screenshot shows rather than only the page's HTML.
 */
import { inflateSync } from "node:zlib";

export interface DecodedPng {
  width: number;
  height: number;
  /** RGBA, row by row. */
  pixels: Uint8Array;
}

const SIGNATURE = [137, 80, 78, 71, 13, 10, 26, 10];

export function decodePng(file: Uint8Array): DecodedPng {
  if (!SIGNATURE.every((byte, i) => file[i] === byte)) throw new Error("Not a PNG file");
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Uint8Array[] = [];
  for (let offset = 8; offset < file.byteLength; ) {
    const length = view.getUint32(offset);
    const type = String.fromCharCode(...file.subarray(offset + 4, offset + 8));
    const data = file.subarray(offset + 8, offset + 8 + length);
    if (type === "IHDR") {
      width = view.getUint32(offset + 8);
      height = view.getUint32(offset + 12);
      const [depth, colorType, , , interlace] = data.subarray(8, 13);
      if (depth !== 8 || interlace !== 0 || (colorType !== 2 && colorType !== 6))
        throw new Error(`Unsupported PNG: depth ${depth}, colour type ${colorType}, interlace ${interlace}`);
      channels = colorType === 6 ? 4 : 3;
    } else if (type === "IDAT") {
      idat.push(data);
    } else if (type === "IEND") {
      break;
    }
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const rows = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = rows.subarray(y * stride, (y + 1) * stride);
    const prev = y > 0 ? rows.subarray((y - 1) * stride, y * stride) : new Uint8Array(stride);
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? out[x - channels]! : 0;
      const b = prev[x]!;
      const c = x >= channels ? prev[x - channels]! : 0;
      const value = line[x]!;
      out[x] =
        filter === 0
          ? value
          : filter === 1
            ? value + a
            : filter === 2
              ? value + b
              : filter === 3
                ? value + ((a + b) >> 1)
                : value + paeth(a, b, c);
    }
  }
  const pixels = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    pixels[i * 4] = rows[i * channels]!;
    pixels[i * 4 + 1] = rows[i * channels + 1]!;
    pixels[i * 4 + 2] = rows[i * channels + 2]!;
    pixels[i * 4 + 3] = channels === 4 ? rows[i * channels + 3]! : 255;
  }
  return { width, height, pixels };
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** The most frequent colour, as [r, g, b], with its share of all pixels. */
export function dominantColour(png: DecodedPng): { rgb: [number, number, number]; share: number } {
  const counts = new Map<number, number>();
  for (let i = 0; i < png.pixels.length; i += 4) {
    const key = (png.pixels[i]! << 16) | (png.pixels[i + 1]! << 8) | png.pixels[i + 2]!;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  let best = 0;
  let bestCount = 0;
  for (const [key, count] of counts)
    if (count > bestCount) {
      best = key;
      bestCount = count;
    }
  return { rgb: [best >> 16, (best >> 8) & 255, best & 255], share: bestCount / (png.width * png.height) };
}

/** Number of distinct colours; a blank page has one or two. */
export function distinctColours(png: DecodedPng): number {
  const seen = new Set<number>();
  for (let i = 0; i < png.pixels.length; i += 4)
    seen.add((png.pixels[i]! << 16) | (png.pixels[i + 1]! << 8) | png.pixels[i + 2]!);
  return seen.size;
}

/** True when `rgb` is within `tolerance` of `expected` on every channel. */
export function near(rgb: readonly number[], expected: readonly number[], tolerance = 12): boolean {
  return rgb.every((value, i) => Math.abs(value - expected[i]!) <= tolerance);
}
