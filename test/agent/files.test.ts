import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AgentDirectories } from "../../src/agent/directories.ts";
import { DEFAULT_AGENT_LIMITS, loadAgentFiles } from "../../src/agent/files.ts";
import { parseSkill } from "../../src/agent/front-matter.ts";
import { agentFilesSummary } from "../../src/agent/prompt.ts";
import { createAgentFileTools, resourcePathProblem } from "../../src/agent/tools.ts";
import { recordingLogger } from "../support/logger.ts";
import { tempDir } from "../support/runtime.ts";

let dir: { path: string; cleanup: () => void };
let root: string;
beforeEach(() => {
  dir = tempDir("switchboard-agent-files-");
  root = join(dir.path, "agent");
  mkdirSync(root);
});
afterEach(() => dir.cleanup());

function write(rel: string, text: string): void {
  mkdirSync(join(root, rel, ".."), { recursive: true });
  writeFileSync(join(root, rel), text);
}
const skill = (name: string, description = `Use ${name}`, body = `Body of ${name}`) =>
  write(`skills/${name}/SKILL.md`, `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`);

async function call(tools: ReturnType<typeof createAgentFileTools>, name: string, input: unknown) {
  return (tools[name]!.execute as (i: unknown, o: unknown) => Promise<Record<string, unknown>>)(input, {
    toolCallId: "c1",
    messages: [],
  });
}

describe("loading", () => {
  test("instructions, skills and resources load; a missing directory is an empty generation", () => {
    write("INSTRUCTIONS.md", "Be terse.\n");
    skill("triage");
    write("resources/faq.md", "# Frequently asked\nQ and A");
    write("README.md", "not read");
    const files = loadAgentFiles(root);
    expect(files.exists).toBe(true);
    expect(files.instructions).toBe("Be terse.");
    expect([...files.skills.keys()]).toEqual(["triage"]);
    expect(files.resources.get("faq.md")?.description).toBe("Frequently asked");
    expect(files.problems).toEqual([]);
    const missing = loadAgentFiles(join(dir.path, "nope"));
    expect(missing.exists).toBe(false);
    expect(missing.skills.size).toBe(0);
    expect(missing.version).toBe("absent");
  });

  test("the version follows content: equal files, equal version; a change, a new one", () => {
    skill("a");
    const v1 = loadAgentFiles(root).version;
    expect(loadAgentFiles(root).version).toBe(v1);
    skill("a", "Use a", "Changed body");
    expect(loadAgentFiles(root).version).not.toBe(v1);
  });

  test("symbolic links are refused: a linked skill folder, resource and INSTRUCTIONS.md", () => {
    const outside = join(dir.path, "outside");
    mkdirSync(join(outside, "leak"), { recursive: true });
    writeFileSync(join(outside, "secret.txt"), "TOP SECRET");
    writeFileSync(join(outside, "leak", "SKILL.md"), "---\nname: leak\ndescription: x\n---\nTOP SECRET");
    mkdirSync(join(root, "skills"), { recursive: true });
    mkdirSync(join(root, "resources"), { recursive: true });
    symlinkSync(join(outside, "leak"), join(root, "skills", "leak"));
    symlinkSync(join(outside, "secret.txt"), join(root, "resources", "secret.txt"));
    symlinkSync(join(outside, "secret.txt"), join(root, "INSTRUCTIONS.md"));
    const files = loadAgentFiles(root);
    expect(files.skills.size).toBe(0);
    expect(files.resources.size).toBe(0);
    expect(files.instructions).toBeNull();
    expect(files.problems.map((p) => p.file).sort()).toEqual(
      ["INSTRUCTIONS.md", "resources/secret.txt", "skills/leak"].sort(),
    );
    for (const p of files.problems) expect(p.problem).toContain("symbolic link");
  });

  test("bounds: file size, skill count, total bytes and depth are enforced and reported", () => {
    const limits = {
      ...DEFAULT_AGENT_LIMITS,
      maxSkills: 2,
      maxFileBytes: 100,
      maxTotalBytes: 250,
      maxDepth: 2,
    };
    skill("a");
    skill("b");
    skill("c");
    write("resources/big.md", "x".repeat(101));
    write("resources/one/two/deep.md", "deep");
    write("resources/fits.md", "y".repeat(90));
    write("resources/overflow.md", "z".repeat(90));
    const files = loadAgentFiles(root, limits);
    expect([...files.skills.keys()]).toEqual(["a", "b"]);
    const byFile = Object.fromEntries(files.problems.map((p) => [p.file, p.problem]));
    expect(byFile["skills/c/SKILL.md"]).toContain("limit of 2 skills");
    expect(byFile["resources/big.md"]).toContain("101 bytes");
    expect(byFile["resources/one/two"]).toContain("deeper than 2");
    expect(byFile["resources/overflow.md"]).toContain("past 250 bytes");
    expect(files.resources.has("fits.md")).toBe(true);
  });

  test("a broken skill is reported with the file and the fix; the others still load", () => {
    skill("good");
    write("skills/nofront/SKILL.md", "just text");
    write("skills/badyaml/SKILL.md", "---\nname: [unclosed\n---\nbody");
    write("skills/wrongname/SKILL.md", "---\nname: other\ndescription: d\n---\nbody");
    write("skills/nodesc/SKILL.md", "---\nname: nodesc\n---\nbody");
    mkdirSync(join(root, "skills", "empty"));
    write("resources/binary.bin", "\xff\xfe");
    writeFileSync(join(root, "resources", "binary.bin"), Buffer.from([0xff, 0xfe, 0x00]));
    const files = loadAgentFiles(root);
    expect([...files.skills.keys()]).toEqual(["good"]);
    const byFile = Object.fromEntries(files.problems.map((p) => [p.file, p]));
    expect(byFile["skills/nofront/SKILL.md"]?.fix).toContain("front matter");
    expect(byFile["skills/badyaml/SKILL.md"]?.problem).toContain("not valid YAML");
    expect(byFile["skills/wrongname/SKILL.md"]?.problem).toContain('lives in the folder "wrongname"');
    expect(byFile["skills/nodesc/SKILL.md"]?.fix).toContain("description:");
    expect(byFile["skills/empty"]?.problem).toBe("has no SKILL.md");
    expect(byFile["resources/binary.bin"]?.problem).toBe("is not UTF-8 text");
  });

  test("front matter: a quoted description with a colon; an overlong one is refused", () => {
    const ok = parseSkill('---\nname: a\ndescription: "When: always"\n---\nbody', "a");
    expect(ok).toEqual({ ok: true, name: "a", description: "When: always", body: "body" });
    const long = parseSkill(`---\nname: a\ndescription: ${"d".repeat(301)}\n---\nbody`, "a");
    expect(long.ok).toBe(false);
  });
});

test("the example agent directory in examples/agent loads without a problem", () => {
  const files = loadAgentFiles(join(import.meta.dir, "..", "..", "examples", "agent"));
  expect(files.problems).toEqual([]);
  expect([...files.skills.keys()]).toEqual(["release-notes"]);
  expect([...files.resources.keys()]).toEqual(["style.md"]);
  expect(files.instructions).toContain("read_skill");
});

describe("prompt and tools", () => {
  test("the summary lists names and descriptions only, and stays within its bound", () => {
    for (let i = 0; i < 60; i += 1)
      skill(`skill-${String(i).padStart(2, "0")}`, "d".repeat(200), "SECRET BODY");
    write("resources/a.md", "# A file");
    const files = loadAgentFiles(root);
    const summary = agentFilesSummary(files, 3000);
    expect(summary.length).toBeLessThanOrEqual(3000);
    expect(summary).toContain("- skill-00: ");
    expect(summary).toMatch(/… and \d+ more skills not listed here/);
    expect(summary).not.toContain("SECRET BODY");
    expect(agentFilesSummary(loadAgentFiles(join(dir.path, "none")))).toBe("");
  });

  test("read_skill and read_resource answer from the generation; bad paths are refused before lookup", async () => {
    skill("triage", "Use triage", "Sort by severity");
    write("resources/docs/a.md", "Alpha");
    const tools = createAgentFileTools(loadAgentFiles(root));
    expect(await call(tools, "read_skill", { name: "triage" })).toMatchObject({
      ok: true,
      instructions: "Sort by severity",
    });
    expect(await call(tools, "read_skill", { name: "nope" })).toMatchObject({
      ok: false,
      hint: "Skills: triage",
    });
    expect(await call(tools, "read_resource", { path: "docs/a.md" })).toMatchObject({
      ok: true,
      text: "Alpha",
    });
    for (const path of [
      "/etc/passwd",
      "../INSTRUCTIONS.md",
      "docs/../docs/a.md",
      "docs\\a.md",
      "C:/x",
      "docs//a.md",
    ]) {
      expect(resourcePathProblem(path)).not.toBeNull();
      expect(await call(tools, "read_resource", { path })).toMatchObject({ ok: false });
    }
    expect(createAgentFileTools(loadAgentFiles(join(dir.path, "none")))).toEqual({});
  });
});

describe("reload", () => {
  test("a changed file is noticed by polling; a pinned version survives the reload; the swap is whole", async () => {
    skill("a", "Use a", "first");
    const logger = recordingLogger();
    const dirs = new AgentDirectories([root], { logger, pollMs: 50 });
    const before = dirs.current(root);
    dirs.start();
    try {
      skill("a", "Use a", "second");
      skill("b");
      const deadline = Date.now() + 10_000;
      while (dirs.current(root).version === before.version && Date.now() < deadline) await Bun.sleep(20);
      const after = dirs.current(root);
      expect(after.version).not.toBe(before.version);
      expect(after.skills.get("a")?.body).toBe("second");
      expect([...after.skills.keys()]).toEqual(["a", "b"]);
      expect(dirs.pinned(root, before.version).skills.get("a")?.body).toBe("first");
      expect(before.skills.has("b")).toBe(false);
      expect(logger.records.some((r) => r.event === "agent.reloaded" && r.previous === before.version)).toBe(
        true,
      );
    } finally {
      dirs.stop();
    }
  });

  test("an unknown pinned version falls back to the current one and says so", () => {
    skill("a");
    const logger = recordingLogger();
    const dirs = new AgentDirectories([root], { logger, pollMs: 0 });
    expect(dirs.pinned(root, "0123456789ab", "run_1").version).toBe(dirs.current(root).version);
    expect(logger.records.find((r) => r.event === "agent.version_unavailable")?.runId).toBe("run_1");
  });

  test("a forced reload with no change keeps the version; problems are logged at start", () => {
    write("skills/bad/SKILL.md", "oops");
    const logger = recordingLogger();
    const dirs = new AgentDirectories([root], { logger, pollMs: 0 });
    expect(dirs.reload("SIGHUP", true)).toEqual([]);
    const refused = logger.records.find((r) => r.event === "agent.file_refused");
    expect(refused).toMatchObject({ file: "skills/bad/SKILL.md", level: "warn" });
  });
});
