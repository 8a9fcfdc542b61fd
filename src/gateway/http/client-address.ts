/**
 * The client's address as the socket reports it (Bun's `server.requestIP`), never as headers
 * claim it: what counts as "this machine", and the key failed authentication is limited by.
 */
import ipaddr from "ipaddr.js";

/** True for a peer on this machine: 127.0.0.0/8, ::1, and their IPv4-mapped form. */
export function isLoopbackAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === "loopback";
}

/**
 * The key one client is limited by: an IPv4 address as it is (an IPv4-mapped IPv6 one unwrapped),
 * an IPv6 address by its /64, since one host commonly holds a whole /64 and could otherwise start
 * afresh from each of its addresses. Anything unparsable (no socket address) is its own key.
 */
export function clientKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const ip = ipaddr.process(address);
  if (ip.kind() === "ipv4") return ip.toString();
  const network = ipaddr.IPv6.networkAddressFromCIDR(`${ip.toNormalizedString()}/64`);
  return `${network.toRFC5952String()}/64`;
}

/**
 * The request carries a reverse proxy's forwarding header: the socket's address is the proxy's,
 * not the client's, so it says nothing about where the client is.
 */
export function forwardedByProxy(request: Request): boolean {
  return (
    request.headers.has("forwarded") ||
    request.headers.has("x-forwarded-for") ||
    request.headers.has("x-real-ip")
  );
}
