import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createOpenRouter } from "@openrouter/ai-sdk-provider";
import { generateText, streamText } from "ai";
import { assembleBody, imageBodyFetch, standInImages, withImageBodies } from "../../src/models/image-body.ts";
import type { LanguageModelV4, LanguageModelV4Prompt } from "../../src/models/language-model-v4.ts";
import { createModelRegistry } from "../../src/models/registry.ts";
import { startFakeLlmServer } from "../support/llm/fake-llm-server.ts";

/*
 * Images travel as markers until the provider's fetch builds the body: the bytes a provider
 * sends must be exactly those it would have sent with the real image in its prompt.
 */

function image(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed * 7) & 0xff;
  bytes[0] = 0xff;
  bytes[1] = 0xd8;
  return bytes;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

function promptWith(text: string, ...images: Uint8Array[]): LanguageModelV4Prompt {
  return [
    {
      role: "user",
      content: [
        { type: "text", text },
        ...images.map((data) => ({
          type: "file" as const,
          mediaType: "image/jpeg",
          data: { type: "data" as const, data },
        })),
      ],
    },
  ];
}

const completion = () =>
  Response.json({
    id: "c1",
    object: "chat.completion",
    created: 0,
    model: "m",
    choices: [{ index: 0, message: { role: "assistant", content: "seen" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });

/** Records each request body as the bytes that would go over the wire. */
function recorder(respond: () => Response = completion) {
  const bodies: Uint8Array[] = [];
  const fetch = (async (_input: unknown, init?: RequestInit) => {
    bodies.push(new Uint8Array(await new Response(init?.body).arrayBuffer()));
    return respond();
  }) as unknown as typeof globalThis.fetch;
  return { bodies, fetch };
}

const providers = [
  {
    name: "openrouter",
    model: (fetch: typeof globalThis.fetch) =>
      createOpenRouter({
        apiKey: "k",
        baseURL: "http://127.0.0.1:9/api/v1",
        compatibility: "strict",
        fetch,
      }).chat("vendor/m") as LanguageModelV4,
  },
  {
    name: "openai-compatible",
    model: (fetch: typeof globalThis.fetch) =>
      createOpenAICompatible({
        name: "openai-compatible",
        baseURL: "http://127.0.0.1:9/v1",
        fetch,
      }).chatModel("m") as LanguageModelV4,
  },
] as const;

describe("assembleBody", () => {
  test("puts each image's base64 where its marker was, leaving the JSON around it as it was", async () => {
    const one = image(3000, 1);
    const two = image(4001, 2);
    const { prompt, lease } = standInImages(promptWith("two photos é ✓", one, two));
    const [m1, m2] = [...lease.images.keys()];
    expect(m1).toHaveLength(32);
    expect(lease.images.get(m1 as string)).toBe(one);
    const body = JSON.stringify({
      prompt,
      a: `data:image/jpeg;base64,${m2}`,
      b: `data:image/png;base64,${m1}`,
    });
    const expected = JSON.stringify({
      prompt,
      a: `data:image/jpeg;base64,${b64(two)}`,
      b: `data:image/png;base64,${b64(one)}`,
    });
    const assembled = await assembleBody("test", body, lease.images).text();
    expect(assembled).toBe(expected);
  });

  test("refuses a body where a marker is missing, repeated, or not a data URL's whole base64", () => {
    const { lease } = standInImages(promptWith("x", image(10, 1)));
    const [marker] = [...lease.images.keys()];
    const bodies = [
      '{"url":"data:image/jpeg;base64,AAAA"}',
      `{"url":"data:image/jpeg;base64,${marker}","again":"data:image/jpeg;base64,${marker}"}`,
      `{"url":"${marker}"}`,
      `{"url":"data:image/jpeg;base64,${marker}AA"}`,
    ];
    for (const body of bodies) {
      expect(() => assembleBody("some-provider", body, lease.images)).toThrow(
        /some-provider provider did not put an image into its request as one base64 data URL/,
      );
    }
  });

  test("leaves non-image and URL parts alone and only stands in user images", () => {
    const url = new URL("https://example.com/a.jpg");
    const prompt: LanguageModelV4Prompt = [
      {
        role: "user",
        content: [
          { type: "file", mediaType: "application/pdf", data: { type: "data", data: image(10, 1) } },
          { type: "file", mediaType: "image/jpeg", data: { type: "url", url } },
          { type: "file", mediaType: "image/jpeg", data: { type: "data", data: "AAAA" } },
        ],
      },
    ];
    const swapped = standInImages(prompt);
    expect(swapped.lease.images.size).toBe(0);
    expect(swapped.prompt).toEqual(prompt);
  });
});

describe.each(providers)("$name through withImageBodies", ({ name, model: modelWith }) => {
  test("sends exactly the bytes the unwrapped provider sends", async () => {
    const photo = image(200_000, 3);
    const prompt = promptWith("look ✓ at this", photo, image(5000, 4));
    const plain = recorder();
    await modelWith(plain.fetch).doGenerate({ prompt });
    const wrapped = recorder();
    const result = await withImageBodies(modelWith(imageBodyFetch(name, wrapped.fetch))).doGenerate({
      prompt,
    });
    expect(wrapped.bodies).toHaveLength(1);
    expect(
      Buffer.from(wrapped.bodies[0] as Uint8Array).equals(Buffer.from(plain.bodies[0] as Uint8Array)),
    ).toBe(true);
    expect(new TextDecoder().decode(plain.bodies[0])).toContain(`data:image/jpeg;base64,${b64(photo)}"`);
    // The request the provider reports (and the AI SDK keeps) carries the marker, not the photo.
    expect(JSON.stringify(result.request?.body ?? "").length).toBeLessThan(10_000);
  });

  test("concurrent calls each send their own images", async () => {
    const wrapped = recorder();
    const delayed = (async (input: unknown, init?: RequestInit) => {
      await Bun.sleep(Math.random() * 20);
      return wrapped.fetch(input as string, init);
    }) as typeof fetch;
    const model = withImageBodies(modelWith(imageBodyFetch(name, delayed)));
    const photos = Array.from({ length: 12 }, (_, i) => image(3000 + i, i));
    await Promise.all(photos.map((photo, i) => model.doGenerate({ prompt: promptWith(`call ${i}`, photo) })));
    const sent = wrapped.bodies.map((body) => new TextDecoder().decode(body));
    for (const [i, photo] of photos.entries()) {
      const body = sent.find((text) => text.includes(`call ${i}"`));
      expect(body).toContain(`data:image/jpeg;base64,${b64(photo)}"`);
    }
  });

  test("the AI SDK's retry resends the image", async () => {
    let calls = 0;
    const wrapped = recorder(() =>
      ++calls === 1 ? Response.json({ error: { message: "overloaded" } }, { status: 503 }) : completion(),
    );
    const photo = image(4000, 9);
    const result = await generateText({
      model: withImageBodies(modelWith(imageBodyFetch(name, wrapped.fetch))),
      messages: [{ role: "user", content: [{ type: "image", image: photo, mediaType: "image/jpeg" }] }],
      maxRetries: 1,
    });
    expect(result.text).toBe("seen");
    expect(wrapped.bodies).toHaveLength(2);
    for (const body of wrapped.bodies)
      expect(new TextDecoder().decode(body)).toContain(`data:image/jpeg;base64,${b64(photo)}"`);
  });
});

describe("imageBodyFetch", () => {
  test("resolves the markers again when a call sends the same body twice, and not after the call", async () => {
    const wrapped = recorder();
    const fetch = imageBodyFetch("test", wrapped.fetch);
    const photo = image(3000, 5);
    let seenBody = "";
    const model = withImageBodies({
      specificationVersion: "v4",
      provider: "test",
      modelId: "m",
      supportedUrls: {},
      doGenerate: async (options) => {
        const message = options.prompt[0];
        const part = message?.role === "user" ? message.content[0] : undefined;
        if (part?.type !== "file" || part.data.type !== "data" || !(part.data.data instanceof Uint8Array))
          throw new Error("no image part");
        seenBody = JSON.stringify({ url: `data:image/jpeg;base64,${b64(part.data.data)}` });
        await fetch("http://127.0.0.1:9/", { method: "POST", body: seenBody });
        await fetch("http://127.0.0.1:9/", { method: "POST", body: seenBody });
        return {
          content: [],
          finishReason: { unified: "stop", raw: "stop" },
          usage: {
            inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
            outputTokens: { total: 0, text: 0, reasoning: 0 },
          },
          warnings: [],
        };
      },
      doStream: () => Promise.reject(new Error("not used")),
    });
    await model.doGenerate({
      prompt: [
        {
          role: "user",
          content: [{ type: "file", mediaType: "image/jpeg", data: { type: "data", data: photo } }],
        },
      ],
    });
    const expected = JSON.stringify({ url: `data:image/jpeg;base64,${b64(photo)}` });
    expect(wrapped.bodies.map((body) => new TextDecoder().decode(body))).toEqual([expected, expected]);
    // Outside the call the marker means nothing: the body goes out as given.
    await fetch("http://127.0.0.1:9/", { method: "POST", body: seenBody });
    expect(new TextDecoder().decode(wrapped.bodies[2])).toBe(seenBody);
  });
});

describe("the registry's providers against the fake server", () => {
  const server = startFakeLlmServer();
  afterAll(() => server.stop());
  beforeEach(() => server.reset());

  test.each(["openrouter:vendor/m", "openai-compatible:m"])("%s delivers the photo's bytes", async (spec) => {
    const model = createModelRegistry({
      SWITCHBOARD_MODEL: spec,
      OPENROUTER_API_KEY: "k",
      OPENROUTER_BASE_URL: server.openrouterBaseUrl,
      OPENAI_COMPATIBLE_BASE_URL: server.openaiBaseUrl,
    }).chain[0].model;
    const photo = image(300_000, 6);
    const result = streamText({
      model,
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "photo ✓" },
            { type: "image", image: photo, mediaType: "image/jpeg" },
          ],
        },
      ],
    });
    await result.consumeStream();
    const [request] = server.requests();
    expect(JSON.stringify(request?.body)).toContain(`data:image/jpeg;base64,${b64(photo)}"`);
  });
});
