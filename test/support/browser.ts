// A real browser for the e2e tier: Playwright (playwright-core, no browser download of its own) driving
// the system's Chromium. scripts/test.sh installs Debian's chromium when it is missing; CHROMIUM_PATH
// names another build.
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

/** CHROMIUM_PATH, else the first of NAMES on the PATH (the names scripts/lib.sh's ensure_chromium looks for). */
export function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  const dirs = (process.env.PATH ?? '/usr/bin').split(delimiter).filter(Boolean);
  const path = NAMES.flatMap((n) => dirs.map((d) => join(d, n))).find((p) => existsSync(p));
  if (!path)
    throw new Error(
      `no Chromium found (${NAMES.join(', ')} on the PATH): run npm test (it installs Debian's chromium), apt-get install chromium, or set CHROMIUM_PATH`,
    );
  return path;
}

export function launchChromium(): Promise<Browser> {
  // --no-sandbox: the tests may run as root (CI does), where Chromium's sandbox refuses to start.
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
}
