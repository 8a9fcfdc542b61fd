/** Which addresses web_fetch refuses: every special range, and IPv4 addresses carried inside IPv6 ones. */
import { expect, test } from "bun:test";
import { isPrivateAddress, refusalReason } from "../../src/tools/web/address.ts";
import { webFetch } from "../../src/tools/web/fetch.ts";

const verdicts = (addresses: string[]) => addresses.map((address) => [address, isPrivateAddress(address)]);

test("plain IPv4 and IPv6: only ordinary unicast is allowed", () => {
  const refused = [
    "127.0.0.1",
    "127.255.0.9",
    "10.1.2.3",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "255.255.255.255",
    "224.0.0.1",
    "240.0.0.1",
    "192.0.0.8",
    "192.0.2.1",
    "198.18.0.1",
    "::1",
    "::",
    "fe80::1",
    "fe80::1%eth0",
    "fd00::1",
    "fc00::1",
    "fec0::1",
    "ff02::1",
    "100::1",
    "2001:db8::1",
    "not-an-ip",
    "127.1",
    "",
  ];
  expect(verdicts(refused)).toEqual(refused.map((address) => [address, true]));
  const allowed = ["93.184.216.34", "172.32.0.1", "8.8.8.8", "2606:4700::1111", "2a00:1450:4001:82a::200e"];
  expect(verdicts(allowed)).toEqual(allowed.map((address) => [address, false]));
});

// Each embedded-IPv4 form: with a loopback or private IPv4 address inside it is refused, with a
// public one allowed.
const FORMS: Array<{ form: string; refused: string[]; allowed: string[] }> = [
  {
    form: "IPv4-mapped ::ffff:a.b.c.d",
    refused: ["::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1"],
    allowed: ["::ffff:8.8.8.8"],
  },
  {
    form: "IPv4-translated ::ffff:0:a.b.c.d",
    refused: ["::ffff:0:127.0.0.1", "::ffff:0:7f00:1", "::ffff:0:192.168.1.1"],
    allowed: ["::ffff:0:8.8.8.8"],
  },
  {
    form: "IPv4-compatible ::a.b.c.d",
    refused: ["::127.0.0.1", "::10.0.0.1"],
    allowed: ["::8.8.8.8"],
  },
  {
    form: "6to4 2002:AABB:CCDD::",
    refused: ["2002:7f00:1::", "2002:7f00:1::1", "2002:c0a8:101::1", "2002:a9fe:a9fe::"],
    allowed: ["2002:808:808::1"],
  },
  {
    // Server 65.54.227.120 in bits 32..63; the client is the last 32 bits XOR 0xffffffff.
    form: "Teredo 2001:0::/32",
    refused: [
      "2001:0:4136:e378:8000:63bf:80ff:fffe", // client 127.0.0.1
      "2001:0:4136:e378:8000:63bf:f5ff:fffe", // client 10.0.0.1
      "2001:0:a00:1:8000:63bf:f7f7:f7f7", // server 10.0.0.1, client 8.8.8.8
    ],
    allowed: ["2001:0:4136:e378:8000:63bf:f7f7:f7f7"], // client 8.8.8.8
  },
  {
    form: "NAT64 64:ff9b::/96",
    refused: ["64:ff9b::127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::10.0.0.1", "64:ff9b::a9fe:a9fe"],
    allowed: ["64:ff9b::8.8.8.8", "64:ff9b::5db8:d822"],
  },
  {
    // The local-use prefix may be /48 to /96 long, so every place RFC 6052 allows is checked:
    // 64:ff9b:1:0:7f:0:108:808 is 1.8.8.8 read as /96 but 127.0.0.1 read as /64.
    form: "local-use NAT64 64:ff9b:1::/48",
    refused: ["64:ff9b:1::127.0.0.1", "64:ff9b:1::7f00:1", "64:ff9b:1:0:7f:0:108:808"],
    allowed: ["64:ff9b:1:808:8:808:808:808"],
  },
];

for (const { form, refused, allowed } of FORMS) {
  test(`${form}: judged by the IPv4 address it carries`, () => {
    expect(verdicts(refused)).toEqual(refused.map((address) => [address, true]));
    expect(verdicts(allowed)).toEqual(allowed.map((address) => [address, false]));
  });
}

test("the reason names the range, and the IPv4 address and form it hides in", () => {
  expect(refusalReason("10.0.0.1")).toBe("private");
  expect(refusalReason("fd00::1")).toBe("uniqueLocal");
  expect(refusalReason("2002:7f00:1::")).toBe("loopback 127.0.0.1, carried in 6to4 form");
  expect(refusalReason("::ffff:0:127.0.0.1")).toBe("loopback 127.0.0.1, carried in IPv4-translated form");
  expect(refusalReason("8.8.8.8")).toBeNull();
});

test("web_fetch refuses the two IPv6 spellings of 127.0.0.1 from the trial, as a URL and after DNS", async () => {
  const options = { allowPrivate: false, timeoutMs: 2_000 };
  await expect(webFetch("http://[2002:7f00:1::]:8787/metrics", options)).rejects.toThrow(
    /2002:7f00:1::.*, a private, loopback or link-local address: refused \(loopback 127\.0\.0\.1, carried in 6to4 form; .*SWITCHBOARD_FETCH_ALLOW_PRIVATE=on/,
  );
  await expect(webFetch("http://[::ffff:0:127.0.0.1]:8787/metrics", options)).rejects.toThrow(
    /refused \(loopback 127\.0\.0\.1, carried in IPv4-translated form/,
  );
  await expect(
    webFetch("http://rebound.example/", { ...options, resolve: async () => ["::ffff:0:127.0.0.1"] }),
  ).rejects.toThrow(/resolves to ::ffff:0:127\.0\.0\.1, a private, loopback or link-local address: refused/);
});
