/**
 * Three WhatsApp business numbers in one gateway, all posting to the one callback URL
 * /whatsapp/webhook, as Meta does for an app's numbers: the `default` number of WHATSAPP_*, an
 * account `sales` that is a second number of the same Meta app (same app secret), and an account
 * `other` of another Meta app (its own secret). Each number is its own Cloud API emulator. Every
 * item goes to the account of its `metadata.phone_number_id`, and every reply leaves from the
 * number that received the message. Composed in this process, its routes served on a port.
 */

import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock } from "../../src/util/clock.ts";
import { startWhatsAppEmulator, type WhatsAppEmulator } from "../emulators/whatsapp/index.ts";
import { FAST_PACING, type InProcessGateway, startInProcessGateway } from "../support/gateway.ts";
import { useE2eFixture } from "./support/fixture.ts";
import { e2eGatewayEnv } from "./support/gateway-env.ts";

const APP_SECRET = "one-meta-app-secret-0123456789abcdef";
const VERIFY_TOKEN = "e2e-whatsapp-accounts-verify";
const fixture = useE2eFixture("switchboard-e2e-accounts-wa-", () =>
  startWhatsAppEmulator({
    appSecret: APP_SECRET,
    accessToken: "EAAGhomeNumberToken0123456789",
    business: { phoneNumberId: "100000000000001", displayPhoneNumber: "15550000001" },
    limits: { pairIntervalMs: null },
  }),
);
const { dir, llm, platform: home } = fixture;
const sales = startWhatsAppEmulator({
  appSecret: APP_SECRET,
  accessToken: "EAAGsalesNumberToken0123456789",
  business: { phoneNumberId: "100000000000002", displayPhoneNumber: "15550000002" },
  limits: { pairIntervalMs: null },
});
const other = startWhatsAppEmulator({
  appSecret: "another-meta-app-secret-0123456789",
  accessToken: "EAAGotherAppToken0123456789",
  business: { phoneNumberId: "100000000000003", displayPhoneNumber: "15550000003" },
  limits: { pairIntervalMs: null },
});
afterAll(async () => {
  await sales.close();
  await other.close();
});
const ALICE = "15551230001";
/** On the sales account's list only. */
const BOB = "15551230002";

function env(): Record<string, string> {
  const configFile = join(dir.path, "whatsapp-accounts.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      version: 1,
      surfaces: { "whatsapp:dm": { inputPolicy: "queue", delivery: "terminal" } },
      accounts: {
        whatsapp: {
          sales: {
            phoneNumberId: sales.business.phoneNumberId,
            accessToken: "${WA_SALES_TOKEN}",
            appSecret: "${WA_APP_SECRET}",
            verifyToken: "${WA_VERIFY_TOKEN}",
            apiRoot: sales.url,
            allowedUsers: [ALICE, BOB],
          },
          other: {
            phoneNumberId: other.business.phoneNumberId,
            accessToken: "${WA_OTHER_TOKEN}",
            appSecret: "${WA_OTHER_SECRET}",
            verifyToken: "${WA_VERIFY_TOKEN}",
            apiRoot: other.url,
            allowedUsers: [ALICE],
          },
        },
      },
      bindings: [
        { match: { channel: "whatsapp", account: "sales" }, instructions: "You are the sales desk." },
      ],
    }),
  );
  return e2eGatewayEnv({
    dir: dir.path,
    llm,
    extra: {
      SWITCHBOARD_CONFIG: configFile,
      WHATSAPP_ACCESS_TOKEN: home.accessToken,
      WHATSAPP_PHONE_NUMBER_ID: home.business.phoneNumberId,
      WHATSAPP_APP_SECRET: APP_SECRET,
      WHATSAPP_VERIFY_TOKEN: VERIFY_TOKEN,
      WHATSAPP_API_ROOT: home.url,
      WHATSAPP_ALLOWED_USERS: ALICE,
      WA_SALES_TOKEN: sales.accessToken,
      WA_OTHER_TOKEN: other.accessToken,
      WA_APP_SECRET: APP_SECRET,
      WA_OTHER_SECRET: other.appSecret,
      WA_VERIFY_TOKEN: VERIFY_TOKEN,
    },
  });
}

const texts = (number: WhatsAppEmulator, waId: string) => number.messages(waId).map((m) => m.text ?? "");

function reply(number: WhatsAppEmulator, waId: string, text: string): Promise<unknown> {
  return number.waitFor(
    () => texts(number, waId).find((t) => t.includes(`echo: ${text}`)),
    20_000,
    `${number.business.phoneNumberId}'s reply to "${text}"`,
  );
}

let running: InProcessGateway | null = null;
afterAll(() => running?.stop({ graceMs: 1000 }));

describe("three WhatsApp numbers on one callback URL", () => {
  test("each item goes to the account of its phone_number_id, and each reply leaves from that number", async () => {
    running = await startInProcessGateway(env(), {
      clock: systemClock,
      limits: FAST_PACING,
      serveRoutes: true,
    });
    const gateway = running;
    const url = `${gateway.url}/whatsapp/webhook`;
    for (const number of [home, sales, other]) number.setWebhookUrl(url);

    // Meta's handshake: one answer for the URL, with the challenge.
    const handshake = await fetch(
      `${url}?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=challenge-42`,
    );
    expect(handshake.status).toBe(200);
    expect(await handshake.text()).toBe("challenge-42");

    for (const [number, text] of [
      [home, "hello home"],
      [sales, "hello sales"],
      [other, "hello other app"],
    ] as const) {
      const { delivery } = number.incoming({ from: ALICE, name: "Alice", text });
      expect((await number.waitForDelivery(delivery, 10_000)).attempts.at(-1)?.status).toBe(200);
      await reply(number, ALICE, text);
    }
    expect(texts(home, ALICE)).toEqual(["echo: hello home"]);
    expect(texts(sales, ALICE)).toEqual(["echo: hello sales"]);
    expect(texts(other, ALICE)).toEqual(["echo: hello other app"]);

    // One POST of the app with items for both its numbers: each account takes its own.
    const mixed = {
      object: "whatsapp_business_account",
      entry: [
        {
          id: home.business.wabaId,
          changes: [home, sales].map((number, i) => ({
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: {
                display_phone_number: number.business.displayPhoneNumber,
                phone_number_id: number.business.phoneNumberId,
              },
              contacts: [{ profile: { name: "Alice" }, wa_id: ALICE }],
              messages: [
                {
                  from: ALICE,
                  id: `wamid.mixed-${i}`,
                  timestamp: String(Math.floor(Date.now() / 1000)),
                  type: "text",
                  text: { body: `mixed for ${number.business.phoneNumberId}` },
                },
              ],
            },
          })),
        },
      ],
    };
    const delivery = await home.waitForDelivery(home.deliverRaw(mixed), 10_000);
    expect(delivery.attempts.at(-1)?.status).toBe(200);
    await reply(home, ALICE, `mixed for ${home.business.phoneNumberId}`);
    await reply(sales, ALICE, `mixed for ${sales.business.phoneNumberId}`);
    expect(texts(home, ALICE).join("\n")).not.toContain(sales.business.phoneNumberId);
    expect(texts(sales, ALICE).join("\n")).not.toContain(home.business.phoneNumberId);

    // A body no account's secret signed is refused.
    const forged = await home.waitForDelivery(home.deliverRaw(mixed, "forged"), 10_000);
    expect(forged.attempts.at(-1)?.status).toBe(401);

    // Bob is on the sales number's list only.
    await sales.waitForDelivery(sales.incoming({ from: BOB, name: "Bob", text: "bob asks sales" }).delivery);
    await reply(sales, BOB, "bob asks sales");
    await home.waitForDelivery(home.incoming({ from: BOB, name: "Bob", text: "bob asks home" }).delivery);
    await home.waitFor(
      () => gateway.logs.find((r) => r.event === "ingress.denied" || r.event === "ingress.ignored"),
      10_000,
      "the home number to refuse bob",
    );
    expect(texts(home, BOB)).toEqual([]);

    const { checks } = await gateway.gateway.readiness();
    for (const slot of ["channel:whatsapp", "channel:whatsapp:sales", "channel:whatsapp:other"])
      expect(checks[slot]?.ok).toBe(true);
    const metrics = await gateway.gateway.renderMetrics();
    for (const account of ["default", "sales", "other"])
      expect(metrics).toContain(
        `switchboard_inbound_accepted_total{channel="whatsapp",account="${account}"}`,
      );
    expect(JSON.stringify(llm.requestsContaining("hello sales")[0]!.messages)).toContain(
      "You are the sales desk.",
    );
    expect(JSON.stringify(llm.requestsContaining("hello home")[0]!.messages)).not.toContain(
      "You are the sales desk.",
    );
  }, 60_000);
});
