import { describe, expect, test } from "bun:test";
import {
  decidePairingIssue,
  generatePairingCode,
  normalizePairingCode,
  PAIRING_ALPHABET,
  PAIRING_CODE_LENGTH,
  PAIRING_MAX_OPEN,
  PAIRING_MIN_INTERVAL_MS,
  pairingMessage,
} from "../../src/access/pairing.ts";

describe("pairing codes", () => {
  test("are 8 characters of the unambiguous alphabet and differ from one another", () => {
    const codes = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const code = generatePairingCode();
      expect(code).toMatch(new RegExp(`^[${PAIRING_ALPHABET}]{${PAIRING_CODE_LENGTH}}$`));
      codes.add(code);
    }
    expect(codes.size).toBe(2000);
    for (const c of "01ILO") expect(PAIRING_ALPHABET).not.toContain(c);
  });

  test("bytes that would bias the alphabet are skipped", () => {
    // 31 symbols: bytes 248..255 would favour the first 8; they are rejected, not folded.
    let call = 0;
    const code = generatePairingCode((bytes) => {
      call++;
      bytes.fill(call === 1 ? 255 : 1);
      if (call === 1) bytes[3] = 0;
      return bytes;
    });
    expect(code).toBe(`${PAIRING_ALPHABET[0]}${PAIRING_ALPHABET[1]!.repeat(7)}`);
  });

  test("what the operator types is normalised, and non-codes are refused", () => {
    expect(normalizePairingCode(" abcd-efgh ")).toBe("ABCDEFGH");
    expect(normalizePairingCode("abcdefg")).toBeNull();
    expect(normalizePairingCode("ABCDEFG0")).toBeNull();
    expect(normalizePairingCode("ABCDEFGHJ")).toBeNull();
  });

  test("a new code unless one was issued within the interval or the open maximum is held", () => {
    const t = 1_000_000;
    const code = (name: string, createdAtMs: number) => ({
      code: name,
      createdAtMs,
      expiresAtMs: createdAtMs + 3_600_000,
    });
    expect(decidePairingIssue([], t)).toEqual({ kind: "new" });
    expect(decidePairingIssue([code("A", t - 1000)], t)).toEqual({
      kind: "repeat",
      code: code("A", t - 1000),
    });
    expect(decidePairingIssue([code("A", t - PAIRING_MIN_INTERVAL_MS)], t)).toEqual({ kind: "new" });
    const open = Array.from({ length: PAIRING_MAX_OPEN }, (_, i) =>
      code(`C${i}`, t - (i + 2) * PAIRING_MIN_INTERVAL_MS),
    );
    expect(decidePairingIssue(open, t)).toEqual({ kind: "repeat", code: open[0]! });
    // Expired codes do not count.
    expect(decidePairingIssue([code("OLD", t - 4_000_000)], t)).toEqual({ kind: "new" });
  });

  test("the message tells the user what to do with the code", () => {
    const text = pairingMessage("ABCDEFGH", 3_600_000, 0);
    expect(text).toContain("switchboard access approve ABCDEFGH");
    expect(text).toContain("60 minutes");
  });
});
