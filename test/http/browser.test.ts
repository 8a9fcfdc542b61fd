/**
 * The web chat page and the operator console in a real browser (the system or the packaged Chromium through
 * playwright-core), against the real HTTP server. Screenshots are saved under test/.artifacts/
 * and decoded to check what they show.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import type { InboundMessage } from "../../channels/types.ts";
import { createWebChannel, type WebChannel, webUserIds } from "../../channels/web/index.ts";
import { type HttpServer, startHttpServer } from "../../src/gateway/http/server.ts";
import { createOperatorService } from "../../src/operator/service.ts";
import { EventBus } from "../../src/runtime/bus.ts";
import { type Seed, seedDatabase } from "../operator/support/seed.ts";
import { tempDir } from "../support/runtime.ts";
import { ARTIFACT_DIR, launchChromium } from "./support/browser.ts";
import { decodePng, distinctColours, dominantColour, near } from "./support/png.ts";
import { capturingLogger, type RecordedCall, recordingOperator, testServices } from "./support/services.ts";
import { XSS_PAYLOADS } from "./support/xss-corpus.ts";

const TOKEN = "browser-token-91c2e7aa55";
const USER_BUBBLE = [47, 91, 211]; // --user in style.css
const AMBER = [217, 119, 6]; // .badge.state-ambiguous
const GREEN = [26, 127, 55]; // .badge.state-delivered

let dir: ReturnType<typeof tempDir>;
let seed: Seed;
let web: WebChannel;
let server: HttpServer;
let browser: Browser;
const APPROVE_DATA = "ap:ap_0123456789ab:a:tag0123456789ab";
const approvalPrompts = new Map<string, string>();
let calls: RecordedCall[];
let bus: EventBus;
const inbound: InboundMessage[] = [];
/** The key the web channel derives user ids under, so the test can name a page's reply target. */
const USER_ID_KEY = "web-user-id-key-browser-0123456789";
/** Lets the POST of "answer me first" return (see the stand-in below). */
let releaseQuestion: (() => void) | undefined;

beforeAll(async () => {
  dir = tempDir("switchboard-browser-");
  seed = await seedDatabase(join(dir.path, "switchboard.sqlite"));
  const recorded = recordingOperator(createOperatorService({ stores: seed.stores, clock: seed.clock }));
  calls = recorded.calls;
  bus = new EventBus(seed.stores.runtime);
  web = createWebChannel({ userIdKey: USER_ID_KEY });
  // Stands in for ingress + runtime + outbox: a typing hint, a first streamed chunk, then the final edit.
  await web.start(async (message) => {
    inbound.push(message);
    // An approval prompt with a button; its press decides and the prompt loses the button.
    if (message.action) {
      const prompt = approvalPrompts.get(message.replyTarget);
      if (prompt !== undefined)
        await web.edit(message.replyTarget, prompt, {
          text: "Approved by you",
          format: "rich",
          idempotencyKey: "approval:outcome",
        });
      return { kind: "action", notice: "Approved." };
    }
    // The run answers before ingress returns (ingress lets queued work go first), and the POST's
    // answer waits until the test has seen the answer on the page: the answer wins every race.
    if (message.text === "answer me first") {
      await web.send(message.replyTarget, {
        text: "The answer, shown before its question was confirmed",
        format: "rich",
        idempotencyKey: `answer-first:${message.updateKey}`,
      });
      await new Promise<void>((resolve) => {
        releaseQuestion = resolve;
      });
      return { kind: "admitted", runId: "run_answer_first", conversationId: "conv_web" };
    }
    if (message.text === "please ask first") {
      const receipt = await web.send(message.replyTarget, {
        text: "Approval needed: **notes_append_note**",
        format: "rich",
        idempotencyKey: "approval:prompt",
        buttons: [[{ label: "Approve", data: APPROVE_DATA }]],
      });
      approvalPrompts.set(message.replyTarget, receipt.messageIds[0]!);
      return { kind: "admitted", runId: "run_approval", conversationId: "conv_web" };
    }
    void (async () => {
      await web.typing(message.replyTarget);
      await Bun.sleep(150);
      const key = `run_${inbound.length}:stream`;
      const receipt = await web.send(message.replyTarget, {
        text: "Hello",
        format: "rich",
        idempotencyKey: key,
      });
      await Bun.sleep(150);
      await web.edit(message.replyTarget, receipt.messageIds[0]!, {
        text: `**Hello**, you said: ${message.text}`,
        format: "rich",
        idempotencyKey: key,
      });
    })();
    return { kind: "admitted", runId: `run_${inbound.length}`, conversationId: "conv_web" };
  });
  server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    services: testServices({
      operator: recorded.operator,
      web,
      operatorToken: TOKEN,
      follow: (conversationId, afterSeq, signal) => bus.follow(conversationId, afterSeq, signal),
    }).services,
    logger: capturingLogger().logger,
  });
  browser = await launchChromium();
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await web?.stop();
  await server?.stop();
  bus?.close();
  seed?.stores.close();
  dir?.cleanup();
});

async function newPage(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 720 } });
  page.setDefaultTimeout(8000);
  return page;
}

async function elementColour(page: Page, selector: string) {
  return dominantColour(decodePng(await page.locator(selector).screenshot()));
}

describe("the web chat page", () => {
  test("sends a message and shows the streamed reply; HTML in messages stays text", async () => {
    const page = await newPage();
    try {
      await page.goto(`${server.url}/`);
      expect(await page.title()).toBe("switchboard");
      await page.locator('#connection[data-state="online"]').waitFor();

      const typed = "Hi <img src=x onerror=alert(1)> `code` there";
      await page.fill("#input", typed);
      await page.press("#input", "Enter");
      await page.locator(".bubble.assistant strong", { hasText: "Hello" }).waitFor();
      const reply = page.locator(".bubble.assistant").last();
      expect(await reply.textContent()).toContain("you said: Hi <img src=x onerror=alert(1)> code there");
      expect(await page.locator(".bubble img").count()).toBe(0);
      expect(await page.locator(".bubble.user code").first().textContent()).toBe("code");
      expect(inbound.at(-1)).toMatchObject({ channel: "web", text: typed, surface: "dm" });

      // A reload replays the session's transcript from the server.
      await page.reload();
      await page.locator(".bubble.assistant strong").waitFor();
      expect(await page.locator(".bubble.user").count()).toBe(1);
      expect(await page.locator(".bubble.assistant").count()).toBe(1);

      const shot = decodePng(await page.screenshot({ path: join(ARTIFACT_DIR, "web-chat.png") }));
      expect([shot.width, shot.height]).toEqual([1100, 720]);
      expect(distinctColours(shot)).toBeGreaterThan(50);
      const bubble = await elementColour(page, ".bubble.user");
      expect(near(bubble.rgb, USER_BUBBLE)).toBe(true);
      expect(bubble.share).toBeGreaterThan(0.5);
    } finally {
      await page.close();
    }
  }, 30_000);

  test("an answer that arrives before its question is confirmed still shows below it, live and after a reload", async () => {
    const page = await newPage();
    const order = () =>
      page
        .locator(".bubble")
        .evaluateAll((bubbles) =>
          bubbles.map(
            (b) =>
              `${b.classList.contains("user") ? "user" : "agent"}${(b as HTMLElement).dataset.pending ? ` (${(b as HTMLElement).dataset.pending})` : ""}`,
          ),
        );
    try {
      await page.goto(`${server.url}/`);
      await page.locator('#connection[data-state="online"]').waitFor();
      await page.fill("#input", "answer me first");
      await page.press("#input", "Enter");
      // The answer is on the page while the question's POST has not returned.
      await page.locator(".bubble.assistant", { hasText: "The answer, shown before" }).waitFor();
      expect(await order()).toEqual(["user (sending)", "agent"]);
      releaseQuestion?.();
      // The stream confirms the question with the gateway's stamp: it stays above its answer.
      await page.locator(".bubble.user:not([data-pending])", { hasText: "answer me first" }).waitFor();
      expect(await order()).toEqual(["user", "agent"]);
      await page.reload();
      await page.locator(".bubble.assistant", { hasText: "The answer, shown before" }).waitFor();
      expect(await order()).toEqual(["user", "agent"]);
    } finally {
      releaseQuestion?.();
      await page.close();
    }
  }, 30_000);
});

describe("the web chat on a 390 px phone", () => {
  test("nothing overflows sideways, long words included, and the whole placeholder shows", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true });
    page.setDefaultTimeout(8000);
    try {
      await page.goto(`${server.url}/`);
      await page.locator('#connection[data-state="online"]').waitFor();
      const placeholder = await page.evaluate(() => {
        const input = document.getElementById("input") as HTMLTextAreaElement;
        const style = getComputedStyle(input);
        const context = document.createElement("canvas").getContext("2d")!;
        context.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const padding = Number.parseFloat(style.paddingLeft) + Number.parseFloat(style.paddingRight);
        return {
          text: input.placeholder,
          textWidth: Math.ceil(context.measureText(input.placeholder).width),
          room: input.clientWidth - padding,
        };
      });
      expect(placeholder.text.length).toBeGreaterThan(0);
      expect(placeholder.textWidth).toBeLessThanOrEqual(placeholder.room);

      const url = `https://example.com/${"a-long-unbroken-path-segment/".repeat(6)}?q=${"0123456789".repeat(4)}`;
      await page.fill("#input", `look at ${url}`);
      await page.press("#input", "Enter");
      await page.locator(".bubble.assistant strong", { hasText: "Hello" }).waitFor();
      const widths = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        viewport: window.innerWidth,
      }));
      expect(widths).toEqual({ page: 390, viewport: 390 });
      await page.screenshot({ path: join(ARTIFACT_DIR, "web-chat-390.png") });
    } finally {
      await page.close();
    }
  }, 30_000);
});

describe("approval buttons in the web chat", () => {
  test("a prompt shows its button; a click sends the press, shows the notice, and the button goes", async () => {
    const page = await newPage();
    try {
      await page.goto(`${server.url}/`);
      await page.locator('#connection[data-state="online"]').waitFor();
      await page.fill("#input", "please ask first");
      await page.press("#input", "Enter");
      const button = page.locator(".bubble.assistant .bubble-buttons button", { hasText: "Approve" });
      await button.waitFor();
      await button.click();
      await page.locator(".bubble.assistant", { hasText: "Approved by you" }).waitFor();
      await page.locator('.bubble.assistant [role="status"]', { hasText: "Approved." }).waitFor();
      expect(await page.locator(".bubble-buttons").count()).toBe(0);
      const press = inbound.find((m) => m.action !== undefined);
      expect(press).toMatchObject({ text: "", action: { data: APPROVE_DATA } });
    } finally {
      await page.close();
    }
  }, 30_000);
});

describe("the composer", () => {
  test("warns before sending a paste over the limit, cuts nothing, and sends once it fits", async () => {
    const page = await newPage();
    try {
      await page.goto(`${server.url}/`);
      await page.locator('#connection[data-state="online"]').waitFor();
      const before = inbound.length;
      const pasted = `${"lorem ipsum ".repeat(750)}the end`; // 9007 characters
      await page.focus("#input");
      await page.evaluate((text) => {
        const input = document.getElementById("input") as HTMLTextAreaElement;
        const data = new DataTransfer();
        data.setData("text/plain", text);
        const paste = new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true });
        if (input.dispatchEvent(paste)) {
          input.setRangeText(text, input.selectionStart, input.selectionEnd, "end");
          input.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertFromPaste" }));
        }
      }, pasted);
      const warning = page.locator("#length-warning");
      await warning.waitFor();
      expect(await warning.textContent()).toContain("9,007 characters; the limit is 8,000");
      expect(await page.inputValue("#input")).toBe(pasted);
      expect(await page.locator("#send").isDisabled()).toBe(true);
      await page.press("#input", "Enter");
      await Bun.sleep(300);
      expect(inbound.length).toBe(before);
      expect(await page.inputValue("#input")).toHaveLength(pasted.length);

      await page.fill("#input", pasted.slice(-2000));
      expect(await warning.isHidden()).toBe(true);
      await page.press("#input", "Enter");
      await page.waitForFunction((n) => document.querySelectorAll(".bubble.user").length >= n, 1);
      expect(inbound.at(-1)?.text).toBe(pasted.slice(-2000));
    } finally {
      await page.close();
    }
  }, 30_000);
});

describe("Markdown in the web chat", () => {
  /** Opens the chat and returns its user id (derived from its session id: the reply target the outbox would use). */
  async function openChat(page: Page): Promise<string> {
    await page.goto(`${server.url}/`);
    await page.locator('#connection[data-state="online"]').waitFor();
    return webUserIds(USER_ID_KEY)(
      (await page.evaluate(() => localStorage.getItem("switchboard.sessionId")))!,
    );
  }

  test("renders lists, headings, tables, quotes, code and links with parentheses", async () => {
    const page = await newPage();
    try {
      const session = await openChat(page);
      const markdown = [
        "#### Steps",
        "1. set OPENROUTER_API_KEY\n2. run `/every 0 9 * * 1-5 summarise`",
        "- one\n- two",
        "| name | value |\n|---|---:|\n| a | 1 |",
        "> a quote",
        "```ts\nconst x = 1 < 2;\n```",
        "See [Foo](https://en.wikipedia.org/wiki/Foo_(bar)) and https://example.org/a_(b).",
      ].join("\n\n");
      await web.send(session, { text: markdown, format: "rich", idempotencyKey: "markdown:1" });
      const reply = page.locator(".bubble.assistant", { hasText: "Steps" });
      await reply.waitFor();
      expect(await reply.locator("h4").textContent()).toBe("Steps");
      expect(await reply.locator("ol > li").count()).toBe(2);
      expect(await reply.locator("ol > li").first().textContent()).toBe("set OPENROUTER_API_KEY");
      expect(await reply.locator("ol code").textContent()).toBe("/every 0 9 * * 1-5 summarise");
      expect(await reply.locator("ul > li").count()).toBe(2);
      expect(await reply.locator("table th").allTextContents()).toEqual(["name", "value"]);
      expect(await reply.locator("table td").allTextContents()).toEqual(["a", "1"]);
      expect(await reply.locator("blockquote").textContent()).toContain("a quote");
      expect(await reply.locator("pre code").textContent()).toBe("const x = 1 < 2;\n");
      const links = await reply
        .locator("a")
        .evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute("href"), a.getAttribute("rel")]));
      expect(links).toEqual([
        ["Foo", "https://en.wikipedia.org/wiki/Foo_(bar)", "noopener noreferrer"],
        ["https://example.org/a_(b)", "https://example.org/a_(b)", "noopener noreferrer"],
      ]);
      await page.screenshot({ path: join(ARTIFACT_DIR, "web-chat-markdown.png") });
    } finally {
      await page.close();
    }
  }, 30_000);

  test("no payload of the XSS corpus runs or leaves markup of its own", async () => {
    const page = await newPage();
    try {
      const session = await openChat(page);
      for (const [index, payload] of XSS_PAYLOADS.entries())
        await web.send(session, { text: payload, format: "rich", idempotencyKey: `xss:${index}` });
      // Also typed by the user, rendered from the page's own copy.
      await page.fill("#input", XSS_PAYLOADS.slice(0, 5).join("\n\n"));
      await page.press("#input", "Enter");
      await page
        .locator(".bubble.assistant")
        .nth(XSS_PAYLOADS.length - 1)
        .waitFor();
      await page.waitForTimeout(500);
      const found = await page.evaluate(() => {
        const root = document.getElementById("transcript")!;
        const elements = Array.from(root.querySelectorAll("*"));
        return {
          xss: (window as unknown as { __xss?: unknown }).__xss ?? null,
          foreign: elements
            .map((e) => e.localName)
            .filter((tag) =>
              [
                "script",
                "img",
                "iframe",
                "svg",
                "math",
                "object",
                "form",
                "input",
                "style",
                "details",
              ].includes(tag),
            ),
          handlers: elements.flatMap((e) =>
            e.getAttributeNames().filter((n) => n.startsWith("on") || n === "style"),
          ),
          hrefs: Array.from(root.querySelectorAll("a")).map((a) => a.getAttribute("href") ?? ""),
        };
      });
      expect(found.xss).toBeNull();
      expect(found.foreign).toEqual([]);
      expect(found.handlers).toEqual([]);
      for (const href of found.hrefs) expect(href).toMatch(/^(?:https?:\/\/|mailto:)/);
      // The payloads are shown as text.
      expect(
        await page.locator(".bubble.assistant", { hasText: "<script>window.__xss=1</script>" }).count(),
      ).toBeGreaterThan(0);
    } finally {
      await page.close();
    }
  }, 30_000);
});

describe("the operator console", () => {
  test("signs in, resolves an ambiguous outbox record as delivered, and shows the new state", async () => {
    const page = await newPage();
    const id = seed.ambiguous.outboxId!;
    try {
      await page.goto(`${server.url}/console`);
      await page.fill("#token", "not-the-token");
      await page.click("#login-form button[type=submit]");
      await page.locator("#login-error", { hasText: "refused" }).waitFor();

      await page.fill("#token", TOKEN);
      await page.click("#login-form button[type=submit]");
      await page.locator("#tabs").waitFor();
      expect(await page.locator("#login").isVisible()).toBe(false);
      await page.click('#tabs button[data-tab="outbox"]');
      const badge = `tr[data-id="${id}"] .badge`;
      expect(await page.locator(badge).textContent()).toBe("ambiguous");
      expect(near((await elementColour(page, badge)).rgb, AMBER)).toBe(true);
      await page.screenshot({ path: join(ARTIFACT_DIR, "console-outbox-before.png") });

      const before = calls.length;
      await page.click(`tr[data-id="${id}"] button[data-action="resolve-delivered"]`);
      await page.locator("#note-dialog[open]").waitFor();
      await page.click("#note-ok");
      await page.locator("#note-error", { hasText: "Write a note" }).waitFor();
      expect(calls.slice(before).some((c) => c.method === "outbox.resolve")).toBe(false);
      await page.fill("#note-input", "Checked in Telegram: the message is there.");
      await page.click("#note-ok");

      await page.locator(`${badge}[data-state="delivered"]`).waitFor();
      await page.locator("#toast", { hasText: `${id} is now delivered` }).waitFor();
      expect(near((await elementColour(page, badge)).rgb, GREEN)).toBe(true);
      expect(calls.find((c) => c.method === "outbox.resolve")?.args).toEqual([
        id,
        "delivered",
        "operator:console",
        "Checked in Telegram: the message is there.",
      ]);
      const stored = (await seed.stores.outbox.show(id))!;
      expect(stored.state).toBe("delivered");
      expect(stored.history.at(-1)).toMatchObject({ actor: "operator:console" });

      const shot = decodePng(await page.screenshot({ path: join(ARTIFACT_DIR, "console-outbox.png") }));
      expect(distinctColours(shot)).toBeGreaterThan(50);
      // The wording says what happens: a record is never sent, and the dialog's way out is not "Cancel".
      expect(await page.locator('button[data-action="cancel"]').first().textContent()).toBe("Never send");
      expect(await page.locator("#note-cancel").textContent()).toBe("Go back");
      // Resolved records offer no more actions.
      expect(await page.locator(`tr[data-id="${id}"] td.actions button`).count()).toBe(0);
    } finally {
      await page.close();
    }
  }, 30_000);

  test("ids are whole on hover with a copy button; times are relative, exact with the zone on hover", async () => {
    const page = await newPage();
    try {
      await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
      await page.goto(`${server.url}/console`);
      await page.fill("#token", TOKEN);
      await page.click("#login-form button[type=submit]");
      await page.click('#tabs button[data-tab="outbox"]');
      const id = seed.pending.outboxId!;
      const row = page.locator(`tr[data-id="${id}"]`);
      expect(await row.locator("td.id-cell .id").first().getAttribute("title")).toBe(id);
      await row.locator("button.copy").first().click();
      await row.locator("button.copy", { hasText: "✓" }).first().waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(id);
      const time = row.locator("td.time time");
      expect(await time.textContent()).toMatch(/ago|^in |just now/);
      const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
      expect(await time.getAttribute("title")).toMatch(
        new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d ${zone}$`),
      );
    } finally {
      await page.close();
    }
  }, 30_000);

  test("approvals: a pending tool call with its arguments; Approve decides it as the console's operator", async () => {
    // A run that ended asking for one call, as the runtime leaves it (T2 with the request).
    const stores = seed.stores;
    const nowMs = seed.clock.now();
    const admitted = await stores.runtime.admit({
      conversation: { key: "web:local:dm:approvals-console-0001" },
      idempotencyKey: "browser-approval",
      fingerprint: "browser-approval",
      parts: [{ type: "text", text: "append a note" }],
      context: { test: true },
      policy: "queue",
      coalescePending: false,
      proposedIds: { runId: "run_browser_approval", messageId: "msg_browser_approval" },
      nowMs,
    });
    const acquired = await stores.runtime.acquireRun({
      runId: admitted.runId,
      owner: "t",
      nowMs,
      leaseMs: 60_000,
    });
    const approvalId = "ap_0c0ffee0c0ff";
    await stores.runtime.commitTerminal({
      fence: acquired!.fence,
      state: "awaiting_approval",
      assistantParts: [
        { type: "tool-call", toolCallId: "call-1", toolName: "notes_append", input: { text: "buy milk" } },
        { type: "tool-approval-request", approvalId, toolCallId: "call-1", toolName: "notes_append" },
      ],
      approvals: [
        {
          id: approvalId,
          toolCallId: "call-1",
          toolName: "notes_append",
          input: { text: "buy milk" },
          binding: "sig",
          expiresAtMs: nowMs + 3_600_000,
        },
      ],
      nowMs,
    });
    const page = await newPage();
    try {
      await page.goto(`${server.url}/console`);
      await page.fill("#token", TOKEN);
      await page.click("#login-form button[type=submit]");
      await page.click('#tabs button[data-tab="approvals"]');
      const row = page.locator(`tr[data-id="${approvalId}"]`);
      await row.locator('.badge[data-state="pending"]').waitFor();
      expect(await row.textContent()).toContain("notes_append");
      expect(await row.textContent()).toContain('{"text":"buy milk"}');
      await row.locator('button[data-action="approve"]').click();
      await page.locator("#toast", { hasText: `${approvalId} is now approved` }).waitFor();
      expect(calls.findLast((c) => c.method === "approvals.decide")?.args).toEqual([
        approvalId,
        "approve",
        "operator:console",
      ]);
      // Decided: gone from the pending list, shown with "show decided".
      expect(await page.locator(`tr[data-id="${approvalId}"]`).count()).toBe(0);
      await page.check("#show-decided");
      await page.locator(`tr[data-id="${approvalId}"] .badge[data-state="approved"]`).waitFor();
    } finally {
      await page.close();
    }
  }, 30_000);

  test("on a 390 px phone no tab overflows sideways: a table's rows are cards, no cell past the edge", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true });
    page.setDefaultTimeout(8000);
    try {
      await page.goto(`${server.url}/console`);
      await page.fill("#token", TOKEN);
      await page.click("#login-form button[type=submit]");
      await page.locator("#tabs").waitFor();
      for (const tab of ["conversations", "outbox", "approvals", "schedules"]) {
        await page.click(`#tabs button[data-tab="${tab}"]`);
        await page.locator("#view h2").first().waitFor();
        const widths = await page.evaluate(() => ({
          page: document.documentElement.scrollWidth,
          body: document.body.scrollWidth,
          viewport: window.innerWidth,
          cellsPastTheEdge: Array.from(document.querySelectorAll("#view td"))
            .filter((cell) => cell.getBoundingClientRect().right > window.innerWidth)
            .map((cell) => cell.textContent?.slice(0, 40)),
        }));
        expect({ tab, ...widths }).toEqual({
          tab,
          page: 390,
          body: widths.viewport,
          viewport: 390,
          cellsPastTheEdge: [],
        });
      }
      await page.screenshot({ path: join(ARTIFACT_DIR, "console-390.png") });
    } finally {
      await page.close();
    }
  }, 30_000);

  test("conversations show their messages with superseded runs marked; schedules can be paused", async () => {
    const page = await newPage();
    try {
      // A newer input with the supersede policy sets the queued run aside.
      await seed.stores.runtime.admit({
        conversation: { key: seed.telegram.key },
        idempotencyKey: "browser-supersede",
        fingerprint: "browser-supersede",
        parts: [{ type: "text", text: "Actually, never mind that" }],
        context: {},
        policy: "supersede",
        coalescePending: false,
        proposedIds: { runId: "run_browser1", messageId: "msg_browser1" },
        nowMs: seed.clock.now(),
      });
      await page.goto(`${server.url}/console`);
      // The token is kept per tab (sessionStorage): a new page signs in again.
      await page.fill("#token", TOKEN);
      await page.click("#login-form button[type=submit]");
      await page.click('#tabs button[data-tab="conversations"]');
      await page.locator(`tr[data-id="${seed.telegram.conversationId}"]`).click();
      await page.locator("#messages .bubble", { hasText: "the summary" }).waitFor();
      expect(await page.locator("#messages .bubble strong").first().textContent()).toBe("the summary");
      const setAside = page.locator("#messages .bubble.set-aside", { hasText: "One more thing" });
      expect(await setAside.locator('.badge[data-state="superseded"]').count()).toBe(1);
      expect(await page.locator("#messages .bubble.set-aside").count()).toBe(1);
      // The live view replays the ledger through the authenticated fetch() stream.
      await page.locator('#live-events li[data-type="terminal"]').first().waitFor();
      await page.screenshot({ path: join(ARTIFACT_DIR, "console-conversation.png") });

      await page.click('#tabs button[data-tab="schedules"]');
      const daily = seed.schedules.daily.id;
      // Whose it is: the chat it belongs to, which outlives /new, next to its conversation.
      await page.locator(`tr[data-id="${daily}"] .id[title="telegram:1:dm:42"]`).waitFor();
      await page.click(`tr[data-id="${daily}"] button[data-action="pause"]`);
      await page.locator(`tr[data-id="${daily}"] .badge[data-state="paused"]`).waitFor();
      expect((await seed.stores.schedules.get(daily))!.state).toBe("paused");
    } finally {
      await page.close();
    }
  }, 30_000);
});
