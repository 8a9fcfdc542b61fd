/**
 * Usage errors: exit 2, a message naming the offending word and the closest valid one, the usage
 * on stderr, nothing on stdout, nothing changed. Run through runCli in-process (the same code the
 * process runs); the first test proves the real process exits 2 too.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { cli, cliInProcess } from "./support/cli.ts";

let dir: ReturnType<typeof tempDir>;
let dbPath: string;
let seed: Seed;

beforeAll(async () => {
  dir = tempDir("switchboard-cli-usage-");
  dbPath = join(dir.path, "switchboard.sqlite");
  seed = await seedDatabase(dbPath);
});

afterAll(() => {
  seed.stores.close();
  dir.cleanup();
});

const sb = (...args: string[]) => cliInProcess(args, { SWITCHBOARD_DB: dbPath });

describe("usage errors exit 2 and name the closest valid word", () => {
  test("the real process: an unknown command and an unknown flag", async () => {
    const command = await cli(["outbx", "list"], { SWITCHBOARD_DB: dbPath });
    expect(command).toMatchObject({ code: 2, stdout: "" });
    expect(command.stderr).toContain("Unknown command 'outbx'. Did you mean 'outbox'?");
    expect(command.stderr).toContain("Usage: switchboard <command>");

    const flag = await cli(["runs", "list", "--stat", "queued"], { SWITCHBOARD_DB: dbPath });
    expect(flag).toMatchObject({ code: 2, stdout: "" });
    expect(flag.stderr).toContain(
      "Unknown option '--stat' for 'switchboard runs list'. Did you mean '--state'?",
    );
    expect(flag.stderr).toContain("Usage: switchboard runs list");
  }, 10_000);

  test("subcommands, values and arguments", async () => {
    const sub = await sb("schedules", "puase", "x");
    expect(sub.code).toBe(2);
    expect(sub.stderr).toContain("Unknown subcommand 'puase' of 'schedules'. Did you mean 'pause'?");
    expect(sub.stderr).toContain("Usage: switchboard schedules <list|runs|pause|resume|cancel>");

    const value = await sb("outbox", "list", "--state", "ambigous");
    expect(value.code).toBe(2);
    expect(value.stderr).toContain(
      "--state 'ambigous' is not one of pending, sending, ambiguous, failed, delivered, cancelled. Did you mean 'ambiguous'?",
    );

    const limit = await sb("runs", "list", "--limit", "0");
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain("--limit must be a whole number from 1 to 1000, not '0'.");
    expect((await sb("runs", "list", "--limit", "ten")).code).toBe(2);
    expect((await sb("runs", "list", "--limit")).stderr).toContain(
      "Option '--limit <value>' argument missing",
    );

    expect((await sb("outbox", "show")).stderr).toContain("'switchboard outbox show' needs ID");
    expect((await sb("outbox", "show", "a", "b")).stderr).toContain("Unexpected argument 'b'");
    expect((await sb("outbox", "list", "--json=yes")).code).toBe(2);
    expect((await sb("--verison")).stderr).toContain(
      "Unknown option '--verison' before the command. Did you mean '--version'?",
    );
    const bare = await sb("outbox");
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain(
      "'switchboard outbox' needs a subcommand: list, show, retry, resolve, cancel.",
    );
    expect((await sb()).stderr).toContain("Missing command.");
  });

  test("outbox resolve needs exactly one outcome and a note; nothing changes otherwise", async () => {
    const id = seed.ambiguous.outboxId!;
    const none = await sb("outbox", "resolve", id, "--note", "x");
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("--delivered (it is in the chat) or --failed (it is not)");
    expect((await sb("outbox", "resolve", id, "--delivered", "--failed", "--note", "x")).code).toBe(2);
    const noNote = await sb("outbox", "resolve", id, "--delivered");
    expect(noNote.code).toBe(2);
    expect(noNote.stderr).toContain("--note");
    expect((await sb("outbox", "resolve", id, "--delivered", "--note", "   ")).code).toBe(2);
    const badActor = await sb("outbox", "retry", id, "--actor", "two words");
    expect(badActor.code).toBe(2);
    expect(badActor.stderr).toContain("use operator:NAME");
    expect((await seed.stores.outbox.show(id))?.state).toBe("ambiguous");
  });

  test("--db and --url together, or a URL without a token, are usage errors; --db wins over $SWITCHBOARD_URL", async () => {
    const both = await sb("runs", "list", "--db", dbPath, "--url", "http://127.0.0.1:9");
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both");
    const noToken = await cliInProcess(["runs", "list"], { SWITCHBOARD_URL: "http://127.0.0.1:9" });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain("needs SWITCHBOARD_OPERATOR_TOKEN");
    const badUrl = await cliInProcess(["runs", "list"], {
      SWITCHBOARD_URL: "127.0.0.1:8080",
      SWITCHBOARD_OPERATOR_TOKEN: "t",
    });
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain("is not an http(s) URL");
    const explicit = await cliInProcess(["runs", "list", "--db", dbPath, "--json"], {
      SWITCHBOARD_URL: "http://127.0.0.1:9",
    });
    expect(explicit.code).toBe(0);
    expect(JSON.parse(explicit.stdout)).toHaveLength(5);
  });
});
