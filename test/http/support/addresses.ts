/** Addresses of this machine for tests that need a peer the server does not see as loopback. */
import { networkInterfaces } from "node:os";

/**
 * An IPv4 address of this machine outside 127.0.0.0/8: a server bound to it and called at it sees
 * the call come from it, a non-loopback peer. Null on a machine with only loopback.
 */
export function nonLoopbackIPv4(): string | null {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return null;
}
