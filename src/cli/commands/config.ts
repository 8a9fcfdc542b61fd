import { CHANNEL_NAMES, SURFACE_KINDS } from "../../../channels/types.ts";
import { fields, preview, table } from "../format.ts";
import { type CommandSpec, type GroupSpec, HELP_OPTION, JSON_OPTION } from "../spec.ts";
import { print } from "./shared.ts";

/** The config modules, loaded only when a config command runs. */
const config = () => import("../../gateway/config/explain.ts");

export const CONFIG_GROUP: GroupSpec = {
  name: "config",
  summary: "what SWITCHBOARD_CONFIG means for a conversation.",
};

export const CONFIG_COMMANDS: CommandSpec[] = [
  {
    path: ["config", "explain"],
    synopsis:
      "config explain --channel C [--account A] [--surface S] [--chat ID] [--user ID] [--team ID] [--guild ID] [--role ID,…] [--json]",
    summary: "Print the settings a conversation gets and which binding, surface or default set each.",
    details:
      "Reads SWITCHBOARD_CONFIG (and SWITCHBOARD_AGENT_DIR) as `switchboard start` would, refusing an invalid file the same way, and matches the bindings against the conversation you describe: the first binding that matches sets what it names over the surface's settings. Ids are the platform's own (a Telegram chat id, a Slack channel and team id, a Discord channel, guild and role ids).",
    args: [],
    options: {
      channel: { type: "string", valueName: "C", description: `The channel: ${CHANNEL_NAMES.join(", ")}.` },
      account: { type: "string", valueName: "A", description: "The account's name. Default: default." },
      surface: {
        type: "string",
        valueName: "S",
        description: `The kind of chat: ${SURFACE_KINDS.join(", ")}. Default: dm.`,
      },
      chat: {
        type: "string",
        valueName: "ID",
        description: "The chat, channel or room id (a thread's chat).",
      },
      user: { type: "string", valueName: "ID", description: "The platform user id of who writes." },
      team: { type: "string", valueName: "ID", description: "The Slack workspace (team) id." },
      guild: { type: "string", valueName: "ID", description: "The Discord server (guild) id." },
      role: {
        type: "string",
        valueName: "ID,…",
        description: "The Discord role ids the user holds, comma-separated.",
      },
      ...JSON_OPTION,
      ...HELP_OPTION,
    },
    async run(command, io) {
      const channel = command.choice("channel", CHANNEL_NAMES);
      if (channel === undefined) throw command.usageError("'switchboard config explain' needs --channel.");
      const surface = command.choice("surface", SURFACE_KINDS) ?? "dm";
      const roles = command
        .string("role")
        ?.split(",")
        .map((role) => role.trim())
        .filter(Boolean);
      const facts = {
        channel,
        account: command.string("account") ?? "default",
        surface,
        ...optional("user", command.string("user")),
        ...optional("chat", command.string("chat")),
        ...optional("team", command.string("team")),
        ...optional("guild", command.string("guild")),
        ...(roles && roles.length > 0 ? { roles } : {}),
      };
      const { explainConversation } = await config();
      print(command, io, explainConversation(io.env, facts), (explained) => {
        const binding =
          explained.binding === null
            ? "none matches: the surfaces and defaults decide"
            : `bindings.${explained.binding} (match ${explained.bindingMatch})`;
        const rows = explained.rows.map((row) => [row.setting, preview(row.value, 80), row.source]);
        return (
          fields([
            ["conversation", explained.conversation],
            ["binding", binding],
            ...(explained.notes.map((note) => ["note", note]) as Array<[string, string]>),
          ]) +
          "\n" +
          table(["SETTING", "VALUE", "SET BY"], rows)
        );
      });
    },
  },
];

function optional<K extends string>(key: K, value: string | undefined): { [key in K]?: string } {
  return value === undefined || value === "" ? {} : ({ [key]: value } as { [key in K]: string });
}
