import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

/** Debian's chromium package (installed by .ci/run); VOXGATE_CHROMIUM overrides the path. */
export const CHROMIUM_PATH = process.env.VOXGATE_CHROMIUM ?? "/usr/bin/chromium";
export const CHROMIUM_INSTALL = "apt-get install -y chromium";

/** In CI a missing browser fails the suite; elsewhere it is a loud skip with the install command. */
export const IN_CI = process.env.CI === "1" || process.env.CI === "true" || process.env.VOXGATE_TEST_REQUIRE_POSTGRES === "1";

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A headless Chromium with a fresh profile directory; no browser is ever downloaded. */
export async function launchBrowser(opts: { colorScheme?: "light" | "dark" } = {}): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), "vg-chromium-"));
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: FLAGS,
    viewport: { width: 1440, height: 900 },
    colorScheme: opts.colorScheme ?? "light",
    timezoneId: "Europe/Paris",
    locale: "en-GB",
    permissions: ["clipboard-read", "clipboard-write"],
  });
}
