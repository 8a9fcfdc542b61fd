/**
 * The pairing lock after PAIRING_MAX_WRONG_ATTEMPTS wrong codes, through the operator API on a
 * real database: it holds back the operator (own token) or the address (shared token, whose actor
 * name the client picks) that guessed, never every operator.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { PAIRING_MAX_WRONG_ATTEMPTS } from "../../src/access/pairing.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { createOperatorService } from "../../src/operator/service.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { nonLoopbackIPv4 } from "./support/addresses.ts";
import { capturingLogger, testServices } from "./support/services.ts";

const SHARED_TOKEN = "op-token-7f3c9d2e41b8";
const ALICE_TOKEN = "alice-own-token-90b2c4d6e8";
const MALLORY_TOKEN = "mallory-own-token-1a2b3c4d5e";
const LAN = nonLoopbackIPv4();

let server: HttpServer | undefined;
let seed: Seed | undefined;
let dir: ReturnType<typeof tempDir> | undefined;

afterEach(async () => {
  await server?.stop();
  seed?.stores.close();
  dir?.cleanup();
  server = seed = dir = undefined;
});

async function start(host = "127.0.0.1") {
  dir = tempDir("switchboard-pairing-lock-");
  seed = await seedDatabase(`${dir.path}/switchboard.sqlite`);
  server = await startHttpServer({
    host,
    port: 0,
    services: testServices({
      operator: createOperatorService({ stores: seed.stores, clock: seed.clock }),
      operatorToken: SHARED_TOKEN,
      operatorTokens: [
        { name: "alice", token: ALICE_TOKEN },
        { name: "mallory", token: MALLORY_TOKEN },
      ],
    }).services,
    logger: capturingLogger().logger,
  });
  return { port: new URL(server.url).port, stores: seed.stores };
}

async function issue(userId: string, code: string): Promise<void> {
  const issued = await seed!.stores.access.issuePairingCode({
    channel: "telegram",
    userId,
    updateKey: `bot1:${userId}`,
    candidate: code,
    nowMs: seed!.clock.now(),
  });
  if (issued.outcome !== "issued") throw new Error(`expected a new code, got ${issued.outcome}`);
}

function approve(baseUrl: string, token: string, code: string, actor?: string): Promise<Response> {
  return fetch(`${baseUrl}/api/access/approve`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      ...(actor ? { "x-switchboard-actor": actor } : {}),
    },
    body: JSON.stringify({ code }),
  });
}

/** Wrong codes until the lock; the last answer is the lock's. */
async function guessUntilLocked(baseUrl: string, token: string, actor?: string): Promise<void> {
  for (let i = 1; i <= PAIRING_MAX_WRONG_ATTEMPTS; i++)
    expect((await approve(baseUrl, token, "WXYZ2345", actor)).status).toBe(404);
  const locked = await approve(baseUrl, token, "WXYZ2345", actor);
  expect(locked.status).toBe(409);
  expect(((await locked.json()) as { error: { message: string } }).error.message).toContain(
    "Other operators can still approve",
  );
}

describe("the pairing lock holds back whoever guessed", () => {
  test("named operators: Mallory is locked after 10 wrong codes; Alice still approves", async () => {
    const { port, stores } = await start();
    const url = `http://127.0.0.1:${port}`;
    await issue("501", "HJKMNPQR");
    await guessUntilLocked(url, MALLORY_TOKEN);
    // Mallory's right code is refused while locked…
    expect((await approve(url, MALLORY_TOKEN, "HJKMNPQR")).status).toBe(409);
    expect(await stores.access.isGranted("telegram", "501")).toBe(false);
    // …and Alice, from the same address, approves it.
    const approved = await approve(url, ALICE_TOKEN, "HJKMNPQR");
    expect(approved.status).toBe(200);
    expect(await approved.json()).toMatchObject({ userId: "501", grantedBy: "operator:alice" });
  });

  test("the shared token: changing the actor name does not escape the lock of the address", async () => {
    const { port, stores } = await start();
    const url = `http://127.0.0.1:${port}`;
    await issue("502", "STUVWXYZ");
    await guessUntilLocked(url, SHARED_TOKEN, "guesser");
    expect((await approve(url, SHARED_TOKEN, "STUVWXYZ", "someone-else")).status).toBe(409);
    expect(await stores.access.isGranted("telegram", "502")).toBe(false);
    // A named operator is not behind that address's lock.
    expect((await approve(url, ALICE_TOKEN, "STUVWXYZ")).status).toBe(200);
  });

  test.skipIf(LAN === null)("the shared token from another address still approves", async () => {
    const { port, stores } = await start("0.0.0.0");
    await issue("503", "ABCDEFGH");
    await guessUntilLocked(`http://127.0.0.1:${port}`, SHARED_TOKEN);
    const other = await approve(`http://${LAN}:${port}`, SHARED_TOKEN, "ABCDEFGH");
    expect(other.status).toBe(200);
    expect(await stores.access.isGranted("telegram", "503")).toBe(true);
  });
});
