/**
 * Media costs through a real gateway process, the Telegram emulator (getFile and file
 * downloads) and the fake LLM server, in one run:
 *  1. Latency: text → first model request against photo → first model request, alternating,
 *     paced (one at a time), each round in a chat of its own (a text, then a photo). A photo adds its download, blob store write, sniffing and scaling
 *     (a JPEG of noise, ~3 MB, 2200×1600). Reported at p50 and p90, and the added
 *     latency at p50 (target ≤ 150 ms).
 *  2. Memory: `--burst` photos of ~10 MB sent at once by as many users; the gateway's RSS
 *     (process tree, sampled every 25 ms) before and at its peak until all are answered
 *     (target: < +300 MB).
 *   npx bun bench/media.ts [--rounds 20] [--burst 20]
 */
import { readFileSync } from "node:fs";
import sharp from "sharp";
import { e2eGatewayEnv } from "../test/e2e/support/gateway-env.ts";
import { startGatewayProcess } from "../test/e2e/support/gateway-process.ts";
import { privateChat, startTelegramEmulator, user } from "../test/emulators/telegram/index.ts";
import { startFakeLlmServer } from "../test/support/llm/fake-llm-server.ts";
import { tempDir } from "../test/support/runtime.ts";
import { argInt } from "./util.ts";

const rounds = argInt("--rounds", 20);
const burst = argInt("--burst", 20);

/** A JPEG of random pixels (incompressible, so the file is as large as a real photo). */
async function noiseJpeg(width: number, height: number, quality: number): Promise<Uint8Array> {
  const raw = new Uint8Array(width * height * 3);
  crypto.getRandomValues(raw.subarray(0, Math.min(raw.byteLength, 65_536)));
  for (let at = 65_536; at < raw.byteLength; at += 65_536)
    crypto.getRandomValues(raw.subarray(at, Math.min(raw.byteLength, at + 65_536)));
  const jpeg = await sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality })
    .toBuffer();
  return new Uint8Array(jpeg);
}

function percentile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** RSS of `pid` and its descendants, in bytes (Linux /proc). */
function treeRssBytes(pid: number): number {
  let total = 0;
  const visit = (id: number) => {
    try {
      const status = readFileSync(`/proc/${id}/status`, "utf8");
      total += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
      const children = readFileSync(`/proc/${id}/task/${id}/children`, "utf8").trim();
      for (const child of children.split(/\s+/).filter(Boolean)) visit(Number(child));
    } catch {}
  };
  visit(pid);
  return total;
}

const dir = tempDir("switchboard-bench-media-");
const llm = startFakeLlmServer();
const telegram = startTelegramEmulator();
const people = Array.from({ length: burst + 1 }, (_, i) => user(930_001 + i, `Media${i}`));
// A chat of its own per latency round: a photo earlier in the same chat would travel in every later
// prompt (the last 4 turns keep their images), and the text rounds would pay for it too.
const readers = Array.from({ length: rounds + 1 }, (_, i) => user(940_001 + i, `Reader${i}`));
const gateway = await startGatewayProcess(
  e2eGatewayEnv({
    dir: dir.path,
    llm,
    extra: {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.url,
      TELEGRAM_ALLOWED_USERS: [...people, ...readers].map((p) => p.id).join(","),
    },
  }),
  60_000,
);

const firstRequestAt = async (marker: string, timeoutMs = 60_000): Promise<number> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // Filtered before it is copied: requests() copies the whole log, every earlier photo's base64
    // with it (about 2.5 MB each), and doing that every 2 ms took a core from the gateway.
    const request = llm.requestsContaining(marker)[0];
    if (request) return request.receivedAtMs;
    if (Date.now() > deadline) throw new Error(`no model request for "${marker}"`);
    await Bun.sleep(2);
  }
};
const replied = (chatId: number, marker: string) =>
  telegram.waitForMessage(chatId, (m) => m.fromBot && m.visibleText.includes(marker), 120_000);

try {
  const photo = await noiseJpeg(2200, 1600, 92);
  let sender = readers[0]!;
  const text: number[] = [];
  const withPhoto: number[] = [];
  let seq = 0;
  const sendText = async () => {
    const marker = `text-${++seq}`;
    const at = Date.now();
    telegram.incoming({ chat: privateChat(sender), from: sender, text: `latency ${marker}` });
    const ms = (await firstRequestAt(marker)) - at;
    await replied(sender.id, marker);
    return ms;
  };
  const sendPhoto = async () => {
    const marker = `photo-${++seq}`;
    telegram.files.add(`${marker}-0`, photo);
    const at = Date.now();
    telegram.incoming({
      chat: privateChat(sender),
      from: sender,
      caption: `latency ${marker}`,
      media: {
        kind: "photo",
        fileId: marker,
        sizes: [{ width: 2200, height: 1600, fileSize: photo.byteLength }],
      },
    });
    const ms = (await firstRequestAt(marker)) - at;
    await replied(sender.id, marker);
    return ms;
  };
  // Warm-up: the first of each loads code paths (sharp, the model client) and is not counted.
  await sendText();
  await sendPhoto();
  for (let i = 0; i < rounds; i++) {
    sender = readers[i + 1]!;
    text.push(await sendText());
    withPhoto.push(await sendPhoto());
    await Bun.sleep(100);
  }
  console.log(
    `photo: ${(photo.byteLength / 1024 / 1024).toFixed(2)} MB JPEG, 2200×1600 (scaled to 2048×1489 and re-encoded)`,
  );
  console.log(`rounds: ${rounds} text + ${rounds} photo, alternating, one at a time`);
  console.log(
    `text  → first model request: p50 ${percentile(text, 0.5)} ms, p90 ${percentile(text, 0.9)} ms`,
  );
  console.log(
    `photo → first model request: p50 ${percentile(withPhoto, 0.5)} ms, p90 ${percentile(withPhoto, 0.9)} ms`,
  );
  console.log(
    `added by the photo at p50: ${percentile(withPhoto, 0.5) - percentile(text, 0.5)} ms (target ≤ 150 ms)`,
  );
  // The gateway's own account of the part: download, sniffing, scaling, stored (its media.prepared log).
  const prepared = gateway.logs
    .flatMap((line) => {
      try {
        const entry = JSON.parse(line) as { event?: string; durationMs?: number };
        return entry.event === "media.prepared" && typeof entry.durationMs === "number"
          ? [entry.durationMs]
          : [];
      } catch {
        return [];
      }
    })
    .slice(1, rounds + 1);
  if (prepared.length > 0)
    console.log(
      `of which preparing the photo (download, sniff, scale, store): p50 ${percentile(prepared, 0.5)} ms, p90 ${percentile(prepared, 0.9)} ms`,
    );

  // Memory: `burst` photos of ~10 MB at once, from as many users (so as many lanes run).
  const big = await Promise.all(Array.from({ length: burst }, () => noiseJpeg(3600, 2700, 95)));
  await Bun.sleep(500);
  const before = treeRssBytes(gateway.pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, treeRssBytes(gateway.pid));
  }, 25);
  const started = Date.now();
  await Promise.all(
    big.map(async (bytes, i) => {
      const who = people[i + 1]!;
      const marker = `burst-${i}`;
      telegram.files.add(`${marker}-0`, bytes);
      telegram.incoming({
        chat: privateChat(who),
        from: who,
        caption: `memory ${marker}`,
        media: {
          kind: "photo",
          fileId: marker,
          sizes: [{ width: 3600, height: 2700, fileSize: bytes.byteLength }],
        },
      });
      await replied(who.id, marker);
    }),
  );
  clearInterval(sampler);
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
  const avg = big.reduce((sum, b) => sum + b.byteLength, 0) / big.length;
  console.log(
    `\nburst: ${burst} photos of ${(avg / 1024 / 1024).toFixed(1)} MB (3600×2700) at once, all answered in ${Date.now() - started} ms`,
  );
  console.log(
    `gateway RSS: ${mb(before)} MB before, ${mb(peak)} MB at peak: +${mb(peak - before)} MB (target < +300 MB)`,
  );
} catch (error) {
  console.error(gateway.logs.slice(-15).join("\n"));
  throw error;
} finally {
  await gateway.kill("SIGTERM");
  await telegram.close();
  await llm.stop();
  dir.cleanup();
}
