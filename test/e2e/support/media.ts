/** Files to send and readings of what the model received, for the media end-to-end test. */
import { expect } from "bun:test";
import type { FileFault } from "../../emulators/file-host.ts";
import type { FakeLlmRequest, FakeLlmServer } from "../../support/llm/fake-llm-server.ts";
import { eventually } from "./gateway-process.ts";

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

/** One platform's part of {@link expectDownloadCrashAnsweredOnce}. */
export interface DownloadCrashPlatform {
  llm: FakeLlmServer;
  /** Hosts `bytes` as `name`, served with `fault`, and sends it to the bot with `caption`. */
  send(file: { name: string; bytes: Uint8Array; fault: FileFault }, caption: string): void;
  /** Downloads of that file begun and finished, as the emulator counts them. */
  downloads(): { started: number; completed: number };
  /** SIGKILLs the gateway and starts a new one on the same database. */
  crashAndRestart(): Promise<void>;
  /** The texts of the bot's messages in the user's chat so far. */
  botTexts(): string[];
}

/**
 * A SIGKILL during a download, with the platform's gateway running: the emulator trickles a 600 KB text file, the gateway is killed
 * once the download has begun, and the restarted gateway fetches it again, completely, and
 * answers once, having shown the model the file's text.
 */
export async function expectDownloadCrashAnsweredOnce(platform: DownloadCrashPlatform): Promise<void> {
  const { llm } = platform;
  const marker = `summarise report ${crypto.randomUUID().slice(0, 8)}`;
  const answer = `Report summarised (${marker}).`;
  const bytes = new TextEncoder().encode("first line of the report\n".repeat(24_000));
  llm.addRules([{ match: { lastUserContains: marker }, reply: { kind: "text", text: answer } }]);
  platform.send(
    { name: "report.txt", bytes, fault: { trickle: { chunkBytes: 20_000, chunkDelayMs: 150 }, times: 1 } },
    marker,
  );
  await eventually(() => platform.downloads().started === 1, 20_000, "the download to begin");
  expect(platform.downloads().completed).toBe(0);
  await platform.crashAndRestart();
  await eventually(() => platform.botTexts().some((t) => t.includes(answer)), 40_000, "the answer");
  // Long enough for a second answer or a third download to show.
  await Bun.sleep(1500);
  expect(platform.downloads()).toEqual({ started: 2, completed: 1 });
  expect(platform.botTexts()).toEqual([expect.stringContaining(answer)]);
  const prompts = llm.requests().filter((r) => r.lastUserText.includes(marker));
  expect(prompts.length).toBe(1);
  expect(prompts[0]?.lastUserText).toContain("first line of the report");
}
