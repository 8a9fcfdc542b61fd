/**
 * Three WhatsApp business numbers in one gateway, all posting to the one callback URL
 * /whatsapp/webhook, as Meta does for an app's numbers: the `default` number of WHATSAPP_*, an
 * account `sales` that is a second number of the same Meta app (same app secret), and an account
 * `other` of another Meta app (its own secret). Each number is its own Cloud API emulator. Every
 * item goes to the account of its `metadata.phone_number_id`, and every reply leaves from the
 * number that received the message. Composed in this process, its routes served on a port.
 */

import { describe, expect, test } from "bun:test";
import { startWhatsAppEmulator, type WhatsAppEmulator } from "../emulators/whatsapp/index.ts";
import * as accounts from "./support/accounts.ts";
import { useE2eFixture } from "./support/fixture.ts";

const APP_SECRET = "one-meta-app-secret-0123456789abcdef";
const VERIFY_TOKEN = "e2e-whatsapp-accounts-verify";
/** One business number, on a Cloud API emulator of its own; `appSecret` is its Meta app's. */
const startNumber = (
  phoneNumberId: string,
  displayPhoneNumber: string,
  appSecret: string,
  accessToken: string,
) =>
  startWhatsAppEmulator({
    appSecret,
    accessToken,
    business: { phoneNumberId, displayPhoneNumber },
    limits: { pairIntervalMs: null },
  });
const fixture = useE2eFixture("switchboard-e2e-accounts-wa-", () =>
  startNumber("100000000000001", "15550000001", APP_SECRET, "EAAGhomeNumberToken0123456789"),
);
const { dir, llm, platform: home } = fixture;
const sales = startNumber("100000000000002", "15550000002", APP_SECRET, "EAAGsalesNumberToken0123456789");
const other = startNumber(
  "100000000000003",
  "15550000003",
  "another-meta-app-secret-0123456789",
  "EAAGotherAppToken0123456789",
);
accounts.closeAfterAll(sales, other);
const gateways = accounts.oneGatewayAtATime({ serveRoutes: true });
const ALICE = "15551230001";
/** On the sales account's list only. */
const BOB = "15551230002";

function env(): Record<string, string> {
  const configFile = accounts.writeConfig(dir.path, "whatsapp-accounts.json", "whatsapp", {
    accounts: {
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
    binding: { account: "sales", instructions: "You are the sales desk." },
  });
  return accounts.gatewayEnv(fixture, configFile, {
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
  });
}

const texts = (number: WhatsAppEmulator, waId: string) => number.messages(waId).map((m) => m.text ?? "");

const reply = (number: WhatsAppEmulator, waId: string, text: string) =>
  accounts.replyThrough(number, () => texts(number, waId), `echo: ${text}`, number.business.phoneNumberId);

describe("three WhatsApp numbers on one callback URL", () => {
  test("each item goes to the account of its phone_number_id, and each reply leaves from that number", async () => {
    const gateway = await gateways.start(env());
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
    await accounts.refusedSender(gateway, "the home number to refuse bob");
    expect(texts(home, BOB)).toEqual([]);

    await accounts.expectServing(gateway, "whatsapp", ["sales", "other"]);
    accounts.expectBoundOnly(llm, "You are the sales desk.", "hello sales", "hello home");
  }, 60_000);
});
