import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createScheduleService } from "../../schedules/service.ts";
import { createSqliteScheduleRepository } from "../../src/store/sqlite/schedules.ts";
import { systemClock } from "../../src/util/clock.ts";
import { openTestDatabase } from "./support/db.ts";
import { recordingDispatch } from "./support/dispatcher.ts";
import { CONVERSATION } from "./support/harness.ts";

let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

const base = { ...CONVERSATION, createdBy: "user" as const, prompt: "water the plants" };

// Lease takeover between two instances in one process is part of the repository conformance suite
// (repository-conformance.ts); this file keeps what needs a database file: separate processes.
describe("leases across instances", () => {
  test(
    "two scheduler processes on one database with real timers dispatch each occurrence once",
    async () => {
      const database = openTestDatabase();
      cleanups.push(() => database.close());
      const repository = createSqliteScheduleRepository(database.db);
      const startMs = Date.now();
      const firstAtMs = startMs + 1500;
      const creator = createScheduleService({
        repository,
        dispatch: recordingDispatch().dispatch,
        clock: systemClock,
        limits: { minIntervalMs: 1000, maxSchedulesPerConversation: 100 },
      });
      const oneOffs = [];
      for (let i = 0; i < 40; i++) {
        oneOffs.push(
          await creator.create({ ...base, when: { kind: "at", atMs: firstAtMs + (i % 4) * 100 } }),
        );
      }
      const recurring = [];
      for (let i = 0; i < 3; i++) {
        recurring.push(
          await creator.create({
            ...base,
            when: { kind: "interval", intervalMs: 1000, firstAtMs },
            timezone: "UTC",
          }),
        );
      }
      const stopAtMs = firstAtMs + 2700; // slots at +0, +1000, +2000
      const script = join(import.meta.dir, "support", "scheduler-process.ts");
      const processes = ["proc-a", "proc-b"].map((owner) =>
        Bun.spawn([process.execPath, script, database.file, owner, String(stopAtMs)], {
          stdout: "pipe",
          stderr: "pipe",
        }),
      );
      const outputs = await Promise.all(
        processes.map(async (child) => {
          const [stdout, stderr, code] = await Promise.all([
            new Response(child.stdout).text(),
            new Response(child.stderr).text(),
            child.exited,
          ]);
          if (code !== 0) throw new Error(`scheduler process exited with ${code}: ${stderr}`);
          return stdout
            .trim()
            .split("\n")
            .filter(Boolean)
            .map(
              (line) => JSON.parse(line) as { owner: string; key?: string; event?: string; detail?: string },
            );
        }),
      );
      const lines = outputs.flat();
      expect(lines.filter((line) => line.event)).toEqual([]);
      const keys = lines.map((line) => line.key as string);
      const counts = new Map<string, number>();
      for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
      expect([...counts.values()].filter((n) => n > 1)).toEqual([]);

      for (const schedule of oneOffs) {
        expect(counts.get(`schedule:${schedule.id}:${schedule.nextAtMs}`)).toBe(1);
      }
      for (const schedule of recurring) {
        const slots = [0, 1000, 2000].map((offset) => `schedule:${schedule.id}:${firstAtMs + offset}`);
        for (const slot of slots) expect(counts.get(slot)).toBe(1);
      }
      expect(keys).toHaveLength(40 + 3 * 3);
      for (const schedule of oneOffs) expect((await repository.get(schedule.id))?.state).toBe("completed");
    },
    { timeout: 15_000 },
  );
});
