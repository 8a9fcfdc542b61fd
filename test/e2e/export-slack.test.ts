/**
 * /export end to end on Slack (Socket Mode): the conversation is shared once as a Markdown file
 * through the upload flow, its bytes the transcript; the same envelope redelivered is a duplicate
 * at ingress and uploads nothing more.
 */
import { describe, expect, test } from "bun:test";
import { startSlackEmulator } from "../emulators/slack/index.ts";
import { slackGatewayEnv, useE2eFixture } from "./support/fixture.ts";
import { eventually } from "./support/gateway-process.ts";
import { metricValue } from "./support/metrics.ts";

const fixture = useE2eFixture("switchboard-e2e-export-slack-", startSlackEmulator);
const { platform: slack } = fixture;
const ALICE = "U0ALICE";
const channel = `D${ALICE.slice(1)}`;
const env = () =>
  slackGatewayEnv(fixture, {
    allowed: [ALICE],
    surfaces: { "slack:dm": { inputPolicy: "queue", delivery: "terminal" } },
  });

async function say(text: string, reply: string): Promise<string> {
  const envelopeId = slack.pushEvent(slack.events.dm({ user: ALICE, text }));
  await slack.waitFor(
    () => slack.messages(channel).find((m) => m.text.includes(reply)),
    20_000,
    `a bot reply containing "${reply}"`,
  );
  return envelopeId;
}

describe("/export on Slack", () => {
  const gateway = fixture.gatewayAroundTests(env);

  test("shares the conversation once as a Markdown file; the envelope redelivered uploads nothing more", async () => {
    await say("plums ripen in August", "echo: plums ripen in August");
    const envelopeId = await say("/export", "This conversation as Markdown: 2 messages");
    const shared = slack.messages(channel).filter((m) => m.files !== undefined);
    expect(shared).toHaveLength(1);
    const [file] = shared[0]!.files!;
    expect(file!.filename).toMatch(/^conversation-.+\.md$/);
    const markdown = new TextDecoder().decode(file!.bytes);
    expect(markdown).toStartWith("# Conversation ");
    expect(markdown).toContain("plums ripen in August");
    expect(markdown).toContain("echo: plums ripen in August");

    const before = await metricValue(gateway.process.url, "switchboard_inbound_duplicates_total", {
      channel: "slack",
    });
    slack.redeliver(envelopeId);
    await eventually(
      async () =>
        (await metricValue(gateway.process.url, "switchboard_inbound_duplicates_total", {
          channel: "slack",
        })) ===
        before + 1,
      10_000,
      "the redelivered /export seen as a duplicate",
    );
    await Bun.sleep(1_000);
    expect(slack.messages(channel).filter((m) => m.files !== undefined)).toHaveLength(1);
    expect(slack.calls("files.getUploadURLExternal")).toHaveLength(1);
  }, 60_000);
});
