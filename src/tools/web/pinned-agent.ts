/**
 * An HTTP agent whose connections go only to addresses web_fetch has already checked. Without it,
 * the connection would resolve the name a second time, and a DNS server that changes its answer
 * between the check and the connection (DNS rebinding) would steer it to a private address.
 */

import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP } from "node:net";
// The path, not the bare "undici": Bun answers `import "undici"` with its own built-in module,
// whose Agent ignores `connect` options and so would resolve the name again.
import { Agent } from "undici/index.js";

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * An undici Agent that connects `hostname` to `addresses` only, never asking DNS. Requests keep
 * the name in their URL, so the Host header, TLS SNI and the certificate check use the name.
 * Pass it as `dispatcher` to undici's fetch, and close it when the response is read.
 */
export function pinnedAgent(hostname: string, addresses: string[]): Agent {
  const pinned: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) }));
  const lookup = (name: string, options: LookupOptions, callback: LookupCallback): void => {
    const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : options.family;
    const usable = pinned.filter((entry) => !family || entry.family === family);
    if (name !== hostname || usable.length === 0) {
      const error: NodeJS.ErrnoException = new Error(
        `${name} has no checked address to connect to (pinned: ${hostname})`,
      );
      error.code = "ENOTFOUND";
      callback(error, "");
      return;
    }
    if (options.all) callback(null, usable);
    else callback(null, usable[0]!.address, usable[0]!.family);
  };
  return new Agent({ connect: { lookup } });
}
