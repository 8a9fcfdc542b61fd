import { isIP } from "node:net";
import { IPv4, IPv6 } from "ipaddr.js";

/*
 * Which addresses web_fetch refuses unless private fetches are allowed. Only ordinary unicast is
 * reached: every range ipaddr.js names (loopback, private, linkLocal, uniqueLocal, unspecified,
 * multicast, carrierGradeNat, broadcast, reserved, benchmarking, ...) is refused. An IPv6 address
 * that carries an IPv4 address (IPv4-mapped, IPv4-translated, IPv4-compatible, 6to4, Teredo,
 * NAT64) is judged by the IPv4 address it carries, since that is where its packets end up.
 */

/** An IPv4 address carried inside an IPv6 one, and the form that carries it. */
interface Embedded {
  form: string;
  ipv4: IPv4;
}

const v4 = (parts: number[], from: number) =>
  new IPv4([parts[from]! >> 8, parts[from]! & 0xff, parts[from + 1]! >> 8, parts[from + 1]! & 0xff]);

const cidr = (text: string) => IPv6.parseCIDR(text);
const MAPPED = cidr("::ffff:0:0/96");
const TRANSLATED = cidr("::ffff:0:0:0/96"); // RFC 6145/7915
const COMPATIBLE = cidr("::/96"); // RFC 4291, deprecated; :: and ::1 have their own names
const SIX_TO_FOUR = cidr("2002::/16"); // RFC 3056: 2002:AABB:CCDD::/48
const TEREDO = cidr("2001::/32"); // RFC 4380
const NAT64 = cidr("64:ff9b::/96"); // RFC 6052 well-known prefix
const NAT64_LOCAL = cidr("64:ff9b:1::/48"); // RFC 8215 local-use prefix, any length from /48 to /96

/** The 32 bits at `bit` of a 128-bit address, skipping bits 64..71 (RFC 6052's reserved octet). */
function rfc6052(parts: number[], bit: number): IPv4 {
  const bytes = parts.flatMap((p) => [p >> 8, p & 0xff]).filter((_, i) => i !== 8);
  const at = bit / 8 - (bit > 64 ? 1 : 0);
  return new IPv4(bytes.slice(at, at + 4));
}

/** Every IPv4 address `address` may deliver to; empty when it carries none. */
function embeddedIPv4(address: IPv6): Embedded[] {
  const p = address.parts;
  if (address.match(MAPPED)) return [{ form: "IPv4-mapped", ipv4: v4(p, 6) }];
  if (address.match(TRANSLATED)) return [{ form: "IPv4-translated", ipv4: v4(p, 6) }];
  if (address.match(COMPATIBLE) && address.range() === "unicast")
    return [{ form: "IPv4-compatible", ipv4: v4(p, 6) }];
  if (address.match(SIX_TO_FOUR)) return [{ form: "6to4", ipv4: v4(p, 1) }];
  if (address.match(TEREDO)) {
    const client = v4([p[6]! ^ 0xffff, p[7]! ^ 0xffff], 0);
    return [
      { form: "Teredo client", ipv4: client },
      { form: "Teredo server", ipv4: v4(p, 2) },
    ];
  }
  if (address.match(NAT64)) return [{ form: "NAT64", ipv4: v4(p, 6) }];
  if (address.match(NAT64_LOCAL)) {
    // The operator picks the prefix length, so the IPv4 address may sit at any of these places.
    return [48, 56, 64, 96].map((length) => ({
      form: `local-use NAT64 (/${length})`,
      ipv4: rfc6052(p, length),
    }));
  }
  return [];
}

/**
 * Why web_fetch refuses `address` (e.g. "loopback", "loopback 127.0.0.1, carried in 6to4 form"),
 * or null when it is ordinary public unicast. Anything that is not a plain IP address is refused.
 */
export function refusalReason(address: string): string | null {
  const family = isIP(address);
  if (family === 4) {
    const range = IPv4.parse(address).range();
    return range === "unicast" ? null : range;
  }
  if (family !== 6) return "not an IP address";
  const parsed = IPv6.parse(address);
  const embedded = embeddedIPv4(parsed);
  for (const { form, ipv4 } of embedded) {
    const range = ipv4.range();
    if (range !== "unicast") return `${range} ${ipv4.toString()}, carried in ${form} form`;
  }
  if (embedded.length > 0) return null;
  const range = parsed.range();
  return range === "unicast" ? null : range;
}

/** True when web_fetch refuses `address` (see refusalReason). */
export function isPrivateAddress(address: string): boolean {
  return refusalReason(address) !== null;
}
