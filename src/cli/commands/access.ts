import type { AccessGrant } from "../../access/store.ts";
import { PLATFORM_CHANNELS } from "../../gateway/channels.ts";
import type { AccessList } from "../../operator/types.ts";
import { fields, isoTime, orDash, table } from "../format.ts";
import { actorOf } from "../options.ts";
import {
  ACTOR_OPTION,
  type CommandSpec,
  type GroupSpec,
  HELP_OPTION,
  JSON_OPTION,
  SOURCE_OPTIONS,
} from "../spec.ts";
import { print, withOperator } from "./shared.ts";

export const ACCESS_GROUP: GroupSpec = {
  name: "access",
  summary: "users admitted with pairing codes (*_ALLOWED_USERS=pairing).",
};

function granted(grant: AccessGrant): string {
  return fields([
    ["channel", grant.channel],
    ["user", grant.userId],
    ["name", orDash(grant.userName)],
    ["granted", isoTime(grant.grantedAtMs)],
    ["granted by", grant.grantedBy],
  ]);
}

function listed(list: AccessList): string {
  const grants =
    list.grants.length === 0
      ? "No access grants.\n"
      : table(
          ["CHANNEL", "USER", "NAME", "GRANTED", "GRANTED BY"],
          list.grants.map((g) => [
            g.channel,
            g.userId,
            orDash(g.userName),
            isoTime(g.grantedAtMs),
            g.grantedBy,
          ]),
        );
  if (list.pending.length === 0) return grants;
  return `${grants}\nWaiting with an open pairing code:\n${table(
    ["CHANNEL", "USER", "NAME", "CODE EXPIRES"],
    list.pending.map((p) => [p.channel, p.userId, orDash(p.userName), isoTime(p.expiresAtMs)]),
  )}`;
}

export const ACCESS_COMMANDS: CommandSpec[] = [
  {
    path: ["access", "approve"],
    synopsis: "access approve CODE [--actor NAME]",
    summary: "Admit the user the bot gave this pairing code; they can write from their next message on.",
    args: [{ name: "CODE", description: "The 8-character pairing code the user was sent." }],
    options: { ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const code = command.arg(0);
      const actor = actorOf(command, io.env);
      const grant = await withOperator(command, io, (service) => service.access.approve(code, actor));
      print(command, io, grant, granted);
    },
  },
  {
    path: ["access", "list"],
    synopsis: "access list [--json]",
    summary: "List the users admitted with a pairing code, and who waits with an open code.",
    args: [],
    options: { ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const list = await withOperator(command, io, (service) => service.access.list());
      print(command, io, list, listed);
    },
  },
  {
    path: ["access", "revoke"],
    synopsis: "access revoke CHANNEL USER_ID [--actor NAME]",
    summary: "Remove a user's access: their next message is refused (runs already queued still finish).",
    args: [
      {
        name: "CHANNEL",
        description: `${PLATFORM_CHANNELS.slice(0, -1).join(", ")} or ${PLATFORM_CHANNELS.at(-1)}.`,
      },
      { name: "USER_ID", description: "The user's platform id, as `access list` shows it." },
    ],
    options: { ...ACTOR_OPTION, ...JSON_OPTION, ...SOURCE_OPTIONS, ...HELP_OPTION },
    async run(command, io) {
      const channel = command.arg(0);
      const userId = command.arg(1);
      const actor = actorOf(command, io.env);
      const revoked = await withOperator(command, io, (service) =>
        service.access.revoke(channel, userId, actor),
      );
      print(
        command,
        io,
        revoked,
        (r) =>
          `Revoked: ${r.channel} user ${r.userId} is refused from their next message on; runs already admitted for them are not cancelled.\n`,
      );
    },
  },
];
