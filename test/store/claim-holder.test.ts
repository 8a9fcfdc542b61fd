import { describe, expect, test } from "bun:test";
import {
  type Claim,
  judgeHolder,
  type ProcessSighting,
  readProcStat,
  STALE_MS,
} from "../../src/store/sqlite/claim-holder.ts";

const here = { pid: 100, host: "box", bootId: "boot-1" };
const now = 1_000_000;
const claim = (over: Partial<Claim> = {}): Claim => ({
  pid: 200,
  host: "box",
  startedAtMs: now - 60_000,
  heartbeatAtMs: now - 1000,
  procStart: 5000,
  bootId: "boot-1",
  ...over,
});
const seeing = (sighting: ProcessSighting) => () => sighting;

describe("judging the holder of a SQLite file's claim", () => {
  test("the same process, running since the claim, is alive", () => {
    expect(judgeHolder(claim(), here, now, seeing({ kind: "running", procStart: 5000 }))).toBe("alive");
  });

  test("a zombie, a missing process or a pid reused by a later process is dead, however fresh the heartbeat", () => {
    expect(judgeHolder(claim(), here, now, seeing({ kind: "zombie" }))).toBe("dead");
    expect(judgeHolder(claim(), here, now, seeing({ kind: "absent" }))).toBe("dead");
    expect(judgeHolder(claim(), here, now, seeing({ kind: "running", procStart: 9000 }))).toBe("dead");
  });

  test("a claim from before a reboot is dead", () => {
    expect(
      judgeHolder(claim({ bootId: "boot-0" }), here, now, seeing({ kind: "running", procStart: 5000 })),
    ).toBe("dead");
  });

  test("a stale heartbeat is dead without looking at the process", () => {
    const look = () => {
      throw new Error("looked");
    };
    expect(judgeHolder(claim({ heartbeatAtMs: now - STALE_MS }), here, now, look)).toBe("dead");
  });

  test("another host, no procfs or a claim without a start time cannot be judged", () => {
    const running = seeing({ kind: "running", procStart: 5000 });
    expect(judgeHolder(claim({ host: "other" }), here, now, running)).toBe("unknown");
    expect(judgeHolder(claim(), here, now, seeing({ kind: "exists" }))).toBe("unknown");
    expect(judgeHolder(claim({ procStart: undefined }), here, now, running)).toBe("unknown");
  });

  test("its own claim is its own", () => {
    expect(judgeHolder(claim({ pid: 100 }), here, now, seeing({ kind: "absent" }))).toBe("self");
  });

  test("/proc/<pid>/stat is read past a command name with spaces and parentheses", async () => {
    const { mkdtempSync, symlinkSync, rmSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(join(tmpdir(), "stat-"));
    const odd = join(dir, "a b) (c");
    symlinkSync("/bin/sleep", odd);
    const child = Bun.spawn([odd, "5"]);
    try {
      for (let i = 0; i < 50 && !readProcStat(child.pid); i++) await Bun.sleep(10);
      const stat = readProcStat(child.pid);
      expect(stat?.state).toMatch(/^[RS]$/);
      expect(stat?.start).toBeGreaterThan(0);
      expect(stat?.start).toBe(readProcStat(child.pid)?.start);
    } finally {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(readProcStat(2 ** 22 + 7)).toBeNull();
  });
});
