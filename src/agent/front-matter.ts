/** A skill file's front matter: `---`, YAML with `name` and `description`, `---`, then the body. */
export type SkillParse =
  | { ok: true; name: string; description: string; body: string }
  | { ok: false; problem: string; fix: string };

/** Skill names: lower-case words joined by `-` or `_`, as the folder that holds SKILL.md is named. */
export const SKILL_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const MAX_DESCRIPTION_CHARS = 300;

const EXAMPLE = "---\\nname: release-notes\\ndescription: How to write release notes\\n---\\n<body>";

/** Parses SKILL.md text; `folder` is the name of the directory it lives in, which `name` must match. */
export function parseSkill(text: string, folder: string): SkillParse {
  const match = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)([\s\S]*)$/.exec(text);
  if (!match) {
    return {
      ok: false,
      problem: "has no front matter (it must start with a line '---', then name and description, then '---')",
      fix: `start the file with front matter, e.g. ${EXAMPLE}`,
    };
  }
  let data: unknown;
  try {
    data = Bun.YAML.parse(match[1]!);
  } catch (error) {
    return {
      ok: false,
      problem: `has front matter that is not valid YAML (${error instanceof Error ? error.message : String(error)})`,
      fix: "write one 'key: value' per line; quote a value that contains ': ' or starts with a special character",
    };
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return { ok: false, problem: "has front matter that is not a set of 'key: value' lines", fix: EXAMPLE };
  }
  const { name, description } = data as Record<string, unknown>;
  if (typeof name !== "string" || !SKILL_NAME.test(name)) {
    return {
      ok: false,
      problem: `has ${typeof name === "string" ? `name "${name.slice(0, 80)}", which is not a valid skill name` : "no name"}`,
      fix: `set "name: ${folder}" (lower-case letters, digits, - and _, at most 64 characters, the same as the folder)`,
    };
  }
  if (name !== folder) {
    return {
      ok: false,
      problem: `has name "${name}" but lives in the folder "${folder}"`,
      fix: `rename the folder to ${name} or set "name: ${folder}"`,
    };
  }
  if (typeof description !== "string" || description.trim() === "") {
    return {
      ok: false,
      problem: "has no description",
      fix: 'add "description: <one line saying when to use this skill>" to the front matter',
    };
  }
  if (description.length > MAX_DESCRIPTION_CHARS) {
    return {
      ok: false,
      problem: `has a description of ${description.length} characters (at most ${MAX_DESCRIPTION_CHARS})`,
      fix: "shorten the description to one sentence; put the details in the body",
    };
  }
  const body = match[2]!.trim();
  if (body === "")
    return {
      ok: false,
      problem: "has no body after the front matter",
      fix: "write the skill's instructions below the closing '---'",
    };
  return { ok: true, name, description: description.trim().replace(/\s+/g, " "), body };
}
