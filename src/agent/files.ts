/**
 * One immutable generation of an agent directory: INSTRUCTIONS.md, skills/<name>/SKILL.md and
 * resources/…, read completely into memory with strict bounds. Tools answer from the generation,
 * never from the disk, so a run cannot see a file change halfway through, and nothing outside the
 * declared root is ever opened: symbolic links are refused, paths are walked from the root only.
 */
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  type Dirent,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
} from "node:fs";
import { join } from "node:path";
import { parseSkill } from "./front-matter.ts";

export interface AgentLimits {
  /** Skills loaded at most; more are reported and left out. */
  maxSkills: number;
  /** Resource files loaded at most. */
  maxResources: number;
  /** Largest single file, in bytes (INSTRUCTIONS.md, a SKILL.md or a resource). */
  maxFileBytes: number;
  /** All loaded files together, in bytes. */
  maxTotalBytes: number;
  /** Deepest folder nesting under resources/. */
  maxDepth: number;
  /** Directory entries looked at in one walk, so a huge tree cannot stall a reload. */
  maxEntries: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = {
  maxSkills: 64,
  maxResources: 256,
  maxFileBytes: 64 * 1024,
  maxTotalBytes: 2 * 1024 * 1024,
  maxDepth: 6,
  maxEntries: 4_000,
};

export interface AgentSkill {
  name: string;
  description: string;
  body: string;
}

export interface AgentResource {
  /** Relative to resources/, with `/` separators, e.g. `policies/refunds.md`. */
  path: string;
  /** The first heading or line, bounded: what the prompt's summary shows. */
  description: string;
  text: string;
}

/** A file left out of the generation, and what to do about it. */
export interface AgentProblem {
  file: string;
  problem: string;
  fix: string;
}

export interface AgentFiles {
  /** The directory as declared, resolved to an absolute path. */
  root: string;
  /** A hash of every loaded file's path and content: equal content, equal version. */
  version: string;
  exists: boolean;
  instructions: string | null;
  skills: ReadonlyMap<string, AgentSkill>;
  resources: ReadonlyMap<string, AgentResource>;
  problems: readonly AgentProblem[];
}

export const MAX_RESOURCE_DESCRIPTION_CHARS = 120;

/** A file the walk found, with what is needed to notice that it changed. */
interface Candidate {
  kind: "instructions" | "skill" | "resource";
  /** Relative to the root, `/`-separated. */
  rel: string;
  size: number;
  mtimeMs: number;
  ino: number;
}

interface Walk {
  exists: boolean;
  candidates: Candidate[];
  problems: AgentProblem[];
}

const SYMLINK_FIX = "copy the file into the agent directory instead of linking to it";

/** Lists the files a load would read, refusing symbolic links and bounding the walk. */
function walk(root: string, limits: AgentLimits): Walk {
  const problems: AgentProblem[] = [];
  const candidates: Candidate[] = [];
  let rootStat: ReturnType<typeof lstatSync>;
  try {
    rootStat = lstatSync(root);
  } catch {
    return { exists: false, candidates, problems };
  }
  if (!rootStat.isDirectory()) {
    problems.push({
      file: root,
      problem: "is not a directory",
      fix: "point SWITCHBOARD_AGENT_DIR (or the surface's agentDir) at a folder",
    });
    return { exists: false, candidates, problems };
  }
  let entries = 0;
  const list = (rel: string): Dirent[] => {
    try {
      const found = readdirSync(join(root, rel), { withFileTypes: true });
      entries += found.length;
      return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    } catch {
      return [];
    }
  };
  const add = (kind: Candidate["kind"], rel: string) => {
    try {
      const stat = lstatSync(join(root, rel));
      if (stat.isSymbolicLink()) {
        problems.push({ file: rel, problem: "is a symbolic link, which is refused", fix: SYMLINK_FIX });
        return;
      }
      if (!stat.isFile()) return;
      candidates.push({ kind, rel, size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino });
    } catch {
      // Gone between listing and stat: the next reload sees the directory as it is then.
    }
  };
  const top = list("");
  for (const entry of top) {
    if (entry.isSymbolicLink() && ["INSTRUCTIONS.md", "skills", "resources"].includes(entry.name)) {
      problems.push({ file: entry.name, problem: "is a symbolic link, which is refused", fix: SYMLINK_FIX });
    }
  }
  if (top.some((e) => e.name === "INSTRUCTIONS.md" && e.isFile())) add("instructions", "INSTRUCTIONS.md");
  if (top.some((e) => e.name === "skills" && e.isDirectory())) {
    for (const folder of list("skills")) {
      if (folder.isSymbolicLink()) {
        problems.push({
          file: `skills/${folder.name}`,
          problem: "is a symbolic link, which is refused",
          fix: SYMLINK_FIX,
        });
      } else if (folder.isDirectory()) {
        add("skill", `skills/${folder.name}/SKILL.md`);
        if (
          !candidates.some((c) => c.rel === `skills/${folder.name}/SKILL.md`) &&
          !problems.some((p) => p.file === `skills/${folder.name}/SKILL.md`)
        ) {
          problems.push({
            file: `skills/${folder.name}`,
            problem: "has no SKILL.md",
            fix: `create skills/${folder.name}/SKILL.md with front matter (name, description) and a body`,
          });
        }
      }
      if (entries > limits.maxEntries) break;
    }
  }
  if (top.some((e) => e.name === "resources" && e.isDirectory())) {
    const descend = (rel: string, depth: number) => {
      for (const entry of list(rel)) {
        if (entries > limits.maxEntries) {
          problems.push({
            file: rel,
            problem: `holds more than ${limits.maxEntries} entries in all; the rest is not read`,
            fix: "keep only reference files the agent needs in resources/",
          });
          return;
        }
        const child = `${rel}/${entry.name}`;
        if (entry.isSymbolicLink()) {
          problems.push({ file: child, problem: "is a symbolic link, which is refused", fix: SYMLINK_FIX });
        } else if (entry.isDirectory()) {
          if (depth >= limits.maxDepth) {
            problems.push({
              file: child,
              problem: `is nested deeper than ${limits.maxDepth} folders; it is not read`,
              fix: "move its files up",
            });
          } else descend(child, depth + 1);
        } else if (entry.isFile()) add("resource", child);
      }
    };
    descend("resources", 1);
  }
  return { exists: true, candidates, problems };
}

/** What changes when any file a load reads changes: cheap enough to poll (stat only, no reads). */
export function agentDirFingerprint(root: string, limits: AgentLimits = DEFAULT_AGENT_LIMITS): string {
  const { exists, candidates, problems } = walk(root, limits);
  const hash = createHash("sha256").update(exists ? "dir" : "absent");
  for (const c of candidates) hash.update(`\0${c.rel}\0${c.size}\0${c.mtimeMs}\0${c.ino}`);
  for (const p of problems) hash.update(`\0!${p.file}\0${p.problem}`);
  return hash.digest("hex");
}

/** Reads `rel` without following a symbolic link, refusing it past `maxBytes` or when not UTF-8. */
function readBounded(
  root: string,
  rel: string,
  maxBytes: number,
): { text: string } | { problem: string; fix: string } {
  let fd: number;
  try {
    fd = openSync(join(root, rel), constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ELOOP"
      ? { problem: "is a symbolic link, which is refused", fix: SYMLINK_FIX }
      : { problem: `could not be read (${code ?? String(error)})`, fix: "check the file's permissions" };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { problem: "is not a regular file", fix: "remove it" };
    if (stat.size > maxBytes) {
      return {
        problem: `is ${stat.size} bytes (at most ${maxBytes})`,
        fix: "shorten it, or split it into several resources",
      };
    }
    const buffer = Buffer.alloc(stat.size);
    let read = 0;
    while (read < stat.size) {
      const n = readSync(fd, buffer, read, stat.size - read, read);
      if (n === 0) break;
      read += n;
    }
    try {
      return { text: new TextDecoder("utf-8", { fatal: true }).decode(buffer.subarray(0, read)) };
    } catch {
      return {
        problem: "is not UTF-8 text",
        fix: "keep only text files (Markdown, plain text, JSON…) in the agent directory",
      };
    }
  } finally {
    closeSync(fd);
  }
}

function describeResource(text: string): string {
  const line = text
    .split("\n")
    .map((l) => l.replace(/^#+\s*/, "").trim())
    .find((l) => l !== "" && l !== "---");
  const description = line ?? "(empty)";
  return description.length > MAX_RESOURCE_DESCRIPTION_CHARS
    ? `${description.slice(0, MAX_RESOURCE_DESCRIPTION_CHARS - 1)}…`
    : description;
}

/**
 * Loads one generation of `root`. Never throws for what is in the directory: every file left out
 * is a problem naming the file and the fix. A missing directory is an empty generation.
 */
export function loadAgentFiles(root: string, limits: AgentLimits = DEFAULT_AGENT_LIMITS): AgentFiles {
  const { exists, candidates, problems } = walk(root, limits);
  const hash = createHash("sha256");
  let instructions: string | null = null;
  const skills = new Map<string, AgentSkill>();
  const resources = new Map<string, AgentResource>();
  let totalBytes = 0;
  for (const candidate of candidates) {
    const { rel, kind } = candidate;
    if (kind === "skill" && skills.size >= limits.maxSkills) {
      problems.push({
        file: rel,
        problem: `is past the limit of ${limits.maxSkills} skills`,
        fix: "remove skills the agent does not need",
      });
      continue;
    }
    if (kind === "resource" && resources.size >= limits.maxResources) {
      problems.push({
        file: rel,
        problem: `is past the limit of ${limits.maxResources} resources`,
        fix: "remove resources the agent does not need",
      });
      continue;
    }
    const read = readBounded(root, rel, limits.maxFileBytes);
    if (!("text" in read)) {
      problems.push({ file: rel, ...read });
      continue;
    }
    const bytes = Buffer.byteLength(read.text);
    if (totalBytes + bytes > limits.maxTotalBytes) {
      problems.push({
        file: rel,
        problem: `would take the agent directory past ${limits.maxTotalBytes} bytes in all`,
        fix: "remove or shorten files the agent does not need",
      });
      continue;
    }
    if (kind === "instructions") {
      instructions = read.text.trim() || null;
    } else if (kind === "skill") {
      const folder = rel.split("/")[1]!;
      const parsed = parseSkill(read.text, folder);
      if (!parsed.ok) {
        problems.push({ file: rel, problem: parsed.problem, fix: parsed.fix });
        continue;
      }
      skills.set(parsed.name, { name: parsed.name, description: parsed.description, body: parsed.body });
    } else {
      const path = rel.slice("resources/".length);
      resources.set(path, { path, description: describeResource(read.text), text: read.text });
    }
    totalBytes += bytes;
    hash.update(`${rel}\0${read.text}\0`);
  }
  return {
    root,
    version: exists ? hash.digest("hex").slice(0, 12) : "absent",
    exists,
    instructions,
    skills,
    resources,
    problems,
  };
}

/** The empty generation: no directory, today's behaviour. */
export function noAgentFiles(root: string): AgentFiles {
  return {
    root,
    version: "absent",
    exists: false,
    instructions: null,
    skills: new Map(),
    resources: new Map(),
    problems: [],
  };
}
