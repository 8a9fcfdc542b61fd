/**
 * The one list of chat commands: names, menu descriptions (with translations), arguments and
 * where each applies. The text parser (ChatCommands.match), the help text and every platform's
 * native menu (channels/commands.ts) read it; a command missing here does not compile.
 */
import type { CommandMenu, CommandSpec } from "../../channels/commands.ts";
import type { SCHEDULE_COMMANDS } from "../../schedules/parse.ts";
import type { STATE_COMMANDS } from "../state/commands.ts";

export const OWN_COMMANDS = [
  "new",
  "stop",
  "status",
  "start",
  "help",
  "approve",
  "deny",
  "model",
  "forget",
  "export",
] as const;

export type CommandName =
  | (typeof OWN_COMMANDS)[number]
  | (typeof SCHEDULE_COMMANDS)[number]
  | (typeof STATE_COMMANDS)[number];

/** A command of the list, with its help line (longer than the menu's description). */
interface ListedCommand extends Omit<CommandSpec, "name"> {
  /** The help text's line after `/name` (from its first character: " — …", ", …"); absent: the command is not in the help text. */
  readonly help?: string;
  /** Shown in the help text but in no native menu (/start is Telegram's own start button). */
  readonly menu?: false;
}

const BOTH = ["dm", "group"] as const;
const prompt = (description: string) => ({ name: "prompt", description, required: true });

/**
 * In help-text order. Menu descriptions are at most 100 characters and argument names valid
 * Discord option names (test/gateway/command-list.test.ts checks both).
 */
const LIST: Record<CommandName, ListedCommand> = {
  new: {
    description: "Start a fresh conversation",
    descriptions: { de: "Ein neues Gespräch beginnen" },
    help: " — start a fresh conversation (the old one stays readable)",
    arguments: [],
    places: BOTH,
  },
  stop: {
    description: "Stop the answer in progress",
    descriptions: { de: "Die laufende Antwort anhalten" },
    help: " — stop the answer in progress",
    arguments: [],
    places: BOTH,
  },
  status: {
    description: "Model, running answers, waiting replies and budget",
    descriptions: { de: "Modell, laufende Antworten, wartende Nachrichten und Budget" },
    help: " — model, runs in progress, replies waiting and what is left of your budget",
    arguments: [],
    places: BOTH,
    slackName: "agent-status",
  },
  goal: {
    description: "Show or set the goal I work toward",
    descriptions: { de: "Das Ziel zeigen oder setzen, auf das ich hinarbeite" },
    help: " — the goal I work toward; /goal <text> sets it, /goal done marks it reached",
    arguments: [{ name: "text", description: "The new goal, or done", required: false }],
    places: BOTH,
  },
  todo: {
    description: "My todo list for the goal",
    descriptions: { de: "Meine Aufgabenliste für das Ziel" },
    help: " — my todo list for the goal",
    arguments: [],
    places: BOTH,
  },
  model: {
    description: "List the models or pick one for this conversation",
    descriptions: { de: "Modelle zeigen oder eines für dieses Gespräch wählen" },
    help: " — the models you can pick; /model NAME picks one for this conversation",
    arguments: [
      { name: "name", description: "A model name, or default", required: false, autocomplete: "models" },
    ],
    places: BOTH,
  },
  forget: {
    description: "Delete this conversation for good (asks first)",
    descriptions: { de: "Dieses Gespräch endgültig löschen (fragt vorher)" },
    help: " — delete this conversation for good (asks to confirm with buttons, or /forget confirm)",
    arguments: [],
    places: BOTH,
  },
  export: {
    description: "This conversation as a Markdown file",
    descriptions: { de: "Dieses Gespräch als Markdown-Datei" },
    help: " — this conversation as a Markdown file (a message where files can't be sent)",
    arguments: [],
    places: BOTH,
  },
  in: {
    description: "A reminder after a delay",
    descriptions: { de: "Eine Erinnerung nach einer Wartezeit" },
    help: " 10m stretch — a reminder after a delay",
    arguments: [
      { name: "delay", description: "How long to wait, like 10m, 2h30m or 1d", required: true },
      prompt("What should happen then"),
    ],
    places: BOTH,
  },
  at: {
    description: "A reminder at a date and time",
    descriptions: { de: "Eine Erinnerung zu Datum und Uhrzeit" },
    help: " 2026-12-01 09:00 call mum — at a date and time",
    arguments: [
      { name: "when", description: "A date and time like 2026-12-01 09:00, or 09:00", required: true },
      prompt("What should happen then"),
    ],
    places: BOTH,
  },
  every: {
    description: "A recurring task (cron or an interval)",
    descriptions: { de: "Eine wiederkehrende Aufgabe (Cron oder Intervall)" },
    help: " 0 9 * * 1-5 summarise my inbox — recurring (cron or e.g. /every 2h ...)",
    arguments: [
      {
        name: "cadence",
        description: "A cron expression like 0 9 * * 1-5, or an interval like 2h",
        required: true,
      },
      prompt("What should happen each time"),
    ],
    places: BOTH,
  },
  schedules: {
    description: "List this chat's schedules",
    descriptions: { de: "Die Zeitpläne dieses Chats zeigen" },
    help: ", /cancel <id>, /tz Europe/Berlin",
    arguments: [],
    places: BOTH,
  },
  cancel: {
    description: "Cancel a schedule",
    descriptions: { de: "Einen Zeitplan beenden" },
    arguments: [{ name: "id", description: "The schedule's id (/schedules lists them)", required: true }],
    places: BOTH,
  },
  tz: {
    description: "Set this chat's time zone",
    descriptions: { de: "Die Zeitzone dieses Chats setzen" },
    arguments: [{ name: "zone", description: "An IANA time zone like Europe/Berlin", required: true }],
    places: BOTH,
  },
  approve: {
    description: "Allow a tool call that waits for approval",
    descriptions: { de: "Einen wartenden Werkzeugaufruf erlauben" },
    help: " <id>, /deny <id> — decide a tool call that waits for approval",
    arguments: [{ name: "id", description: "The approval's id", required: true }],
    places: BOTH,
  },
  deny: {
    description: "Refuse a tool call that waits for approval",
    descriptions: { de: "Einen wartenden Werkzeugaufruf ablehnen" },
    arguments: [{ name: "id", description: "The approval's id", required: true }],
    places: BOTH,
  },
  help: {
    description: "What I can do and my commands",
    descriptions: { de: "Was ich kann und meine Befehle" },
    arguments: [],
    places: BOTH,
  },
  start: {
    description: "What I can do and my commands",
    descriptions: { de: "Was ich kann und meine Befehle" },
    arguments: [],
    places: ["dm"],
    menu: false,
  },
};

/** Every command name the text parser knows. */
export const COMMAND_NAMES = Object.keys(LIST) as CommandName[];

/** The commands native menus show, in list order. */
export const MENU_COMMANDS: readonly CommandSpec[] = Object.entries(LIST)
  .filter(([, listed]) => listed.menu !== false)
  .map(([name, { help: _help, menu: _menu, ...spec }]) => ({ name, ...spec }));

/** The reply to /help and /start. */
export const HELP_TEXT = [
  "I'm an AI assistant. Just write to me. Commands:",
  ...Object.entries(LIST).flatMap(([name, listed]) => (listed.help ? [`/${name}${listed.help}`] : [])),
].join("\n");

/** The menu handed to the channels; the model names are read when an adapter asks. */
export function commandMenu(modelNames: () => readonly string[]): CommandMenu {
  return { commands: MENU_COMMANDS, choices: () => modelNames() };
}
