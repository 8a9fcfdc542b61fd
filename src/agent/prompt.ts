import type { AgentFiles } from "./files.ts";

/** Longest skills-and-resources block in the system prompt, in characters. */
export const MAX_SUMMARY_CHARS = 6_000;

/**
 * The skills and resources as one bounded block of name and description lines; bodies stay out
 * of the prompt until the agent reads one. Empty when the generation has neither.
 */
export function agentFilesSummary(files: AgentFiles, maxChars = MAX_SUMMARY_CHARS): string {
  const sections: Array<{ heading: string; lines: string[]; noun: string }> = [];
  if (files.skills.size > 0) {
    sections.push({
      heading:
        "Skills (procedures you can follow). Before using one, load its instructions with read_skill(name):",
      lines: [...files.skills.values()].map((s) => `- ${s.name}: ${s.description}`),
      noun: "skills",
    });
  }
  if (files.resources.size > 0) {
    sections.push({
      heading: "Reference files. Read one with read_resource(path) when it may hold the answer:",
      lines: [...files.resources.values()].map((r) => `- ${r.path}: ${r.description}`),
      noun: "reference files",
    });
  }
  // Every line is checked against what is already written, keeping room for one "… and N more"
  // line per section, so the block never passes `maxChars`.
  const MORE_ROOM = 64;
  let used = 0;
  const out: string[] = [];
  for (const section of sections) {
    const separator = out.length > 0 ? 2 : 0;
    if (used + separator + section.heading.length + MORE_ROOM > maxChars) break;
    const kept = [section.heading];
    used += separator + section.heading.length;
    let left = section.lines.length;
    for (const line of section.lines) {
      if (used + 1 + line.length + MORE_ROOM > maxChars) break;
      kept.push(line);
      used += 1 + line.length;
      left -= 1;
    }
    if (left > 0) {
      const more = `- … and ${left} more ${section.noun} not listed here`;
      kept.push(more);
      used += 1 + more.length;
    }
    out.push(kept.join("\n"));
  }
  return out.join("\n\n");
}
