import { isIP } from "node:net";

/*
 * Which addresses web_fetch refuses unless private fetches are allowed: loopback, private,
 * link-local, carrier-grade NAT, unspecified, multicast and reserved ranges, IPv4 and IPv6
 * (IPv4-mapped IPv6 is judged as the IPv4 address it carries).
 */

const V4_BLOCKED: Array<[string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];

function v4ToInt(address: string): number {
  return address.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);
}

function inV4(address: string, [base, bits]: [string, number]): boolean {
  const mask = bits === 0 ? 0 : 2 ** 32 - 2 ** (32 - bits);
  return (v4ToInt(address) & mask) >>> 0 === (v4ToInt(base) & mask) >>> 0;
}

/** The IPv6 address as 8 numbers, or null when it does not parse. */
function v6Groups(address: string): number[] | null {
  let text = address.toLowerCase().split("%")[0]!;
  const v4Tail = text.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (v4Tail) {
    const n = v4ToInt(v4Tail[1]!);
    text = `${text.slice(0, -v4Tail[1]!.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const parse = (s: string) => (s ? s.split(":").map((g) => Number.parseInt(g, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const fill = tail === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...new Array(Math.max(0, fill)).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff)
    ? groups
    : null;
}

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return V4_BLOCKED.some((range) => inV4(address, range));
  if (family !== 6) return true;
  const g = v6Groups(address);
  if (!g) return true;
  const first = g[0]!;
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) {
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible); also :: and ::1.
    if (g[5] === 0 && g[6] === 0 && (g[7] === 0 || g[7] === 1)) return true;
    return isPrivateAddress(`${g[6]! >> 8}.${g[6]! & 0xff}.${g[7]! >> 8}.${g[7]! & 0xff}`);
  }
  if ((first & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((first & 0xff00) === 0xff00) return true; // multicast
  if (first === 0x64 && g[1] === 0xff9b) return true; // 64:ff9b::/96 NAT64 can reach private v4
  if (first === 0x2001 && g[1] === 0x0db8) return true; // documentation
  return false;
}
