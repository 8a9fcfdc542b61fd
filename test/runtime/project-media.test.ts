import { describe, expect, test } from "bun:test";
import { buildPrompt, MEDIA_TURNS, type ProjectionMedia } from "../../src/runtime/project.ts";
import type { PromptTurn } from "../../src/runtime/store.ts";
import type { FilePart, Message } from "../../src/runtime/types.ts";

const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
const PDF = new TextEncoder().encode("%PDF-1.4 tiny");

function photo(n: number): FilePart {
  return {
    type: "file",
    ref: `ref-${n}`,
    kind: "photo",
    prepared: {
      status: "fetched",
      blobId: `orig-${n}`,
      imageBlobId: `img-${n}`,
      mediaType: "image/jpeg",
      sizeBytes: 1000,
    },
  };
}

function turn(n: number, parts: Message["parts"]): PromptTurn {
  const base = { conversationId: "c", runId: `r${n}`, createdAtMs: n, status: "complete" as const };
  return {
    runId: `r${n}`,
    state: "completed",
    finishSeq: n,
    messages: [
      { ...base, id: `u${n}`, role: "user", parts },
      { ...base, id: `a${n}`, role: "assistant", parts: [{ type: "text", text: `answer ${n}` }] },
    ],
  };
}

const media = (accepts: Array<"image" | "file">): ProjectionMedia => ({
  accepts: new Set(accepts),
  bytes: new Map([...Array.from({ length: 10 }, (_, n) => [`img-${n}`, JPEG] as const), ["pdf", PDF]]),
});

function userContents(prompt: ReturnType<typeof buildPrompt>) {
  return prompt
    .filter((m) => m.role === "user")
    .map((m) => m.content as Array<{ type: string; text?: string }>);
}

describe("attachments in the prompt", () => {
  test(`images older than the last ${MEDIA_TURNS} turns become text references`, () => {
    const history = Array.from({ length: 7 }, (_, n) => turn(n, [{ type: "text", text: `t${n}` }, photo(n)]));
    const current = turn(7, [photo(7)]).messages.slice(0, 1);
    const prompt = buildPrompt(history, current, 1_000_000, media(["image"]));
    const users = userContents(prompt);
    const withImage = users.map((content) => content.some((p) => p.type === "image"));
    expect(withImage).toEqual([false, false, false, true, true, true, true, true]);
    expect(users[0]?.[1]).toEqual({
      type: "text",
      text: "[image photo (image/jpeg, 1000 bytes), shown in an earlier turn]",
    });
    const image = users[7]?.find((p) => p.type === "image") as unknown as {
      image: Uint8Array;
      mediaType: string;
    };
    expect(image.image).toEqual(JPEG);
    expect(image.mediaType).toBe("image/jpeg");
  });

  test("a model that cannot take images gets a note and never an image part", () => {
    const prompt = buildPrompt([], turn(1, [photo(1)]).messages.slice(0, 1), 1_000_000, media([]));
    expect(userContents(prompt)[0]).toEqual([
      { type: "text", text: "[image photo (image/jpeg, 1000 bytes): this model cannot see images]" },
    ]);
  });

  test("PDFs are file parts only for a model that takes files; transcripts and notes are text", () => {
    const pdf: FilePart = {
      type: "file",
      ref: "p",
      name: "a.pdf",
      prepared: { status: "fetched", blobId: "pdf", mediaType: "application/pdf", sizeBytes: 13 },
    };
    const voice: FilePart = {
      type: "file",
      ref: "v",
      kind: "voice",
      prepared: {
        status: "fetched",
        blobId: "v",
        mediaType: "audio/ogg",
        sizeBytes: 9,
        text: "hello there",
        transcript: true,
      },
    };
    const refused: FilePart = {
      type: "file",
      ref: "b",
      name: "big.zip",
      prepared: { status: "refused", note: "the file is larger than the 20 MB limit per file" },
    };
    const current = turn(1, [pdf, voice, refused]).messages.slice(0, 1);
    const withFiles = userContents(buildPrompt([], current, 1_000_000, media(["file"])))[0]!;
    expect(withFiles.map((p) => p.type)).toEqual(["text", "file", "text", "text"]);
    expect(withFiles[2]?.text).toBe("[voice transcript of voice note (audio/ogg, 9 bytes)]: hello there");
    expect(withFiles[3]?.text).toBe(
      "[attachment: big.zip could not be used: the file is larger than the 20 MB limit per file]",
    );
    const textOnly = userContents(buildPrompt([], current, 1_000_000, media([])))[0]!;
    expect(textOnly.map((p) => p.type)).toEqual(["text", "text", "text"]);
  });
});
