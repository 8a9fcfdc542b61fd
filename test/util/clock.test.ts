import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { clampDelayMs, clampIntervalMs, MAX_TIMER_DELAY_MS, systemClock } from "../../src/util/clock.ts";

describe("systemClock timers", () => {
  test("a timer fires once after its delay", async () => {
    const startedAt = performance.now();
    let firedAt: number | null = null;
    let fires = 0;
    systemClock.setTimer(30, () => {
      fires += 1;
      firedAt = performance.now();
    });
    await Bun.sleep(80);
    expect(fires).toBe(1);
    expect(firedAt! - startedAt).toBeGreaterThanOrEqual(25);
  });

  test("a cancelled timer never fires, and cancelling twice is harmless", async () => {
    let fired = false;
    const timer = systemClock.setTimer(10, () => {
      fired = true;
    });
    timer.cancel();
    timer.cancel();
    await Bun.sleep(40);
    expect(fired).toBe(false);
  });

  test("refresh restarts the countdown; a cancelled timer stays cancelled", async () => {
    let fires = 0;
    const timer = systemClock.setTimer(60, () => {
      fires += 1;
    });
    await Bun.sleep(40);
    timer.refresh();
    await Bun.sleep(40);
    expect(fires).toBe(0);
    await Bun.sleep(50);
    expect(fires).toBe(1);
    timer.cancel();
    timer.refresh();
    await Bun.sleep(90);
    expect(fires).toBe(1);
  });

  test("every repeats until cancelled", async () => {
    let fires = 0;
    const timer = systemClock.every(10, () => {
      fires += 1;
    });
    await Bun.sleep(75);
    timer.cancel();
    const atCancel = fires;
    expect(atCancel).toBeGreaterThanOrEqual(3);
    await Bun.sleep(40);
    expect(fires).toBe(atCancel);
  });

  test("an unref'd timer does not keep the process alive", () => {
    const child = Bun.spawnSync({
      cmd: [
        process.execPath,
        "-e",
        `const { systemClock } = await import(${JSON.stringify(new URL("../../src/util/clock.ts", import.meta.url).pathname)});
         systemClock.every(60_000, () => {}, { unref: true });
         systemClock.setTimer(60_000, () => {}, { unref: true });`,
      ],
      timeout: 3_000,
    });
    expect(child.exitCode).toBe(0);
    expect(child.signalCode ?? null).toBeNull();
  });
});

describe("timer delay bounds", () => {
  test("delays are clamped to what setTimeout takes", () => {
    expect(clampDelayMs(-5)).toBe(0);
    expect(clampDelayMs(1500)).toBe(1500);
    expect(clampDelayMs(MAX_TIMER_DELAY_MS + 1)).toBe(MAX_TIMER_DELAY_MS);
    expect(clampIntervalMs(0)).toBe(1);
    expect(clampIntervalMs(Number.MAX_SAFE_INTEGER)).toBe(MAX_TIMER_DELAY_MS);
  });

  test("a delay past the 32-bit limit waits instead of firing at once", async () => {
    let fired = false;
    const timer = systemClock.setTimer(MAX_TIMER_DELAY_MS * 4, () => {
      fired = true;
    });
    await Bun.sleep(30);
    timer.cancel();
    expect(fired).toBe(false);
  });
});

describe("the timer port", () => {
  const ROOT = join(import.meta.dir, "../..");
  /** Every .ts file under `dir`, recursively, except the browser assets (they run in the page). */
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return relative(ROOT, path) === "src/gateway/http/assets" ? [] : sources(path);
      return entry.name.endsWith(".ts") ? [path] : [];
    });

  test("no timer in src/, channels/, outbox/ or schedules/ bypasses the Clock", () => {
    const files = ["src", "channels", "outbox", "schedules"].flatMap((dir) => sources(join(ROOT, dir)));
    expect(files.length).toBeGreaterThan(50);
    const offending = files
      .filter((file) => relative(ROOT, file) !== "src/util/clock.ts")
      .flatMap((file) =>
        readFileSync(file, "utf8")
          .split("\n")
          .flatMap((line, i) =>
            /\b(setTimeout|setInterval)\(/.test(line)
              ? [`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`]
              : [],
          ),
      );
    // Take a Clock (src/util/clock.ts) and call setTimer/every/sleep, so tests can drive the time.
    expect(offending).toEqual([]);
  });
});
