/** What the media end-to-end files share: files to send and readings of what the model received. */
import { expect } from "bun:test";
import sharp from "sharp";
import { scaleForModel } from "../../../src/media/image.ts";
import type { FakeLlmRequest } from "../../support/llm/fake-llm-server.ts";

/** The parts of the user message whose text includes `marker`, as the model server received them. */
export function userParts(requests: FakeLlmRequest[], marker: string): Array<Record<string, unknown>> {
  for (const request of requests) {
    for (const message of request.messages) {
      if (message.role !== "user" || !Array.isArray(message.content)) continue;
      if (message.content.some((p) => p.type === "text" && p.text?.includes(marker))) {
        return message.content as Array<Record<string, unknown>>;
      }
    }
  }
  return [];
}

/** An Ogg Opus header: enough for the type to be sniffed as audio/ogg. */
export function oggOpus(bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  out.set(new TextEncoder().encode("OggS"), 0);
  out[4] = 0;
  out[5] = 2;
  out.set(new TextEncoder().encode("OpusHead"), 28);
  return out;
}

/** A JPEG of one colour, larger than the model is shown (3000×1800). */
export async function largeJpeg(red = 200): Promise<Uint8Array> {
  const bytes = await sharp({
    create: { width: 3000, height: 1800, channels: 3, background: { r: red, g: 60, b: 30 } },
  })
    .jpeg()
    .toBuffer();
  return new Uint8Array(bytes);
}

/** A one-page PDF showing `text` in Helvetica, with a correct cross-reference table (pdf.js reads it). */
export function onePagePdf(text: string): Uint8Array {
  const escaped = text.replace(/[\\()]/g, (c) => `\\${c}`);
  const stream = `BT /F1 18 Tf 72 720 Td (${escaped}) Tj ET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(body.length);
    body += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, "0")} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return new TextEncoder().encode(body);
}

/** The user message's image part holds exactly the scaled original (2048 px on its long side). */
export async function expectScaledImage(
  parts: Array<Record<string, unknown>>,
  original: Uint8Array,
): Promise<void> {
  const image = parts.find((p) => p.type === "image_url") as { image_url: { url: string } } | undefined;
  expect(image).toBeDefined();
  const [prefix, data] = image!.image_url.url.split(",");
  expect(prefix).toBe("data:image/jpeg;base64");
  const sent = new Uint8Array(Buffer.from(data!, "base64"));
  const expected = await scaleForModel(original);
  expect(sent).toEqual(new Uint8Array(expected.bytes));
  const meta = await sharp(sent).metadata();
  expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBe(2048);
}
