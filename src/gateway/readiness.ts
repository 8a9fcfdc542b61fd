import type { StoreBackend } from "../store/backend.ts";

/** One line of `/readyz`. */
export interface ReadinessCheck {
  ok: boolean;
  /** Down, while the gateway serves everything else (a platform unreachable): still ready. */
  degraded?: boolean;
  detail?: string;
}

/** The database's line in `/readyz`: ok when it answers a trivial query, else the driver's error. */
export async function databaseReadiness(stores: Pick<StoreBackend, "ping">): Promise<ReadinessCheck> {
  try {
    await stores.ping();
    return { ok: true };
  } catch (error) {
    return { ok: false, detail: (error as Error).message };
  }
}
