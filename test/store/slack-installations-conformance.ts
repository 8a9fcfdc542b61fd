import { describe, expect, test } from "bun:test";
import type { SlackInstallationStore, SlackInstallationWrite } from "../../channels/slack/installations.ts";

export interface SlackInstallationsHarness {
  store: SlackInstallationStore;
  /** Closes and opens the same database again, as a restart does. */
  reopen(): Promise<SlackInstallationStore>;
  close(): Promise<void>;
}

const T0 = 1_800_000_000_000;

const acme = (sealed: string, tokenExpiresAtMs: number | null = null): SlackInstallationWrite => ({
  installationKey: "T0ACME",
  teamId: "T0ACME",
  enterpriseId: null,
  appId: "A0APP",
  account: "T0ACME:A0APP",
  sealed,
  tokenExpiresAtMs,
});

/** The SlackInstallationStore contract, run against each engine. */
export function runSlackInstallationsConformance(
  engine: string,
  open: () => Promise<SlackInstallationsHarness>,
): void {
  describe(`slack installations conformance (${engine})`, () => {
    test("an install is kept across a reopen; a token refresh replaces the sealed value and keeps the install time", async () => {
      const h = await open();
      try {
        await h.store.saveSlackInstallation(acme("sealed-1", T0 + 43_200_000), T0);
        await h.store.saveSlackInstallation(
          {
            ...acme("sealed-2"),
            installationKey: "E0GRID",
            teamId: null,
            enterpriseId: "E0GRID",
            account: "E0GRID:A0APP",
          },
          T0 + 1,
        );
        await h.store.saveSlackInstallation(acme("sealed-1b", T0 + 90_000_000), T0 + 5000);
        const store = await h.reopen();
        expect(await store.slackInstallation("T0ACME")).toEqual({
          ...acme("sealed-1b", T0 + 90_000_000),
          installedAtMs: T0,
          updatedAtMs: T0 + 5000,
          uninstalledAtMs: null,
          uninstallReason: null,
        });
        expect(
          (await store.slackInstallations()).map((row) => [row.installationKey, row.enterpriseId]),
        ).toEqual([
          ["E0GRID", "E0GRID"],
          ["T0ACME", null],
        ]);
        expect(await store.slackInstallation("T0NOPE")).toBeNull();
      } finally {
        await h.close();
      }
    });

    test("an uninstall removes the sealed tokens once, keeps the row with its reason, and a reinstall clears it", async () => {
      const h = await open();
      try {
        await h.store.saveSlackInstallation(acme("sealed-1", T0 + 1000), T0);
        expect(await h.store.uninstallSlackInstallation("T0ACME", "app_uninstalled", T0 + 10)).toBe(true);
        expect(await h.store.uninstallSlackInstallation("T0ACME", "tokens_revoked", T0 + 20)).toBe(false);
        expect(await h.store.uninstallSlackInstallation("T0NOPE", "app_uninstalled", T0 + 20)).toBe(false);
        const store = await h.reopen();
        expect(await store.slackInstallation("T0ACME")).toMatchObject({
          sealed: null,
          tokenExpiresAtMs: null,
          uninstalledAtMs: T0 + 10,
          uninstallReason: "app_uninstalled",
          account: "T0ACME:A0APP",
        });
        await store.saveSlackInstallation(acme("sealed-again"), T0 + 100);
        expect(await store.slackInstallation("T0ACME")).toMatchObject({
          sealed: "sealed-again",
          installedAtMs: T0 + 100,
          uninstalledAtMs: null,
          uninstallReason: null,
        });
      } finally {
        await h.close();
      }
    });
  });
}
