const DISCORD_EPOCH_MS = 1_420_070_400_000n;
const INCREMENT_BITS = 12n;
const MAX_INCREMENT = (1n << INCREMENT_BITS) - 1n;

/**
 * Makes Discord snowflakes that encode `now()` like the real ones, so discord.js derives
 * `createdTimestamp` from them. Ids made later always compare greater, also within one millisecond.
 */
export class SnowflakeGenerator {
  private lastMs = 0n;
  private increment = 0n;

  constructor(private readonly now: () => number) {}

  next(): string {
    let ms = BigInt(this.now());
    if (ms <= this.lastMs) {
      ms = this.lastMs;
      this.increment += 1n;
      if (this.increment > MAX_INCREMENT) {
        ms += 1n;
        this.increment = 0n;
      }
    } else {
      this.increment = 0n;
    }
    this.lastMs = ms;
    return (((ms - DISCORD_EPOCH_MS) << 22n) | this.increment).toString();
  }
}

/** Milliseconds since the Unix epoch encoded in a snowflake. */
export function snowflakeTimeMs(id: string): number {
  return Number((BigInt(id) >> 22n) + DISCORD_EPOCH_MS);
}
