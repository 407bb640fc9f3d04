// A real browser for the e2e tier: Playwright (playwright-core, no browser download of its own) driving
// the system's Chromium. scripts/test.sh installs Debian's chromium when it is missing; CHROMIUM_PATH
// names another build.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

export function chromiumPath(): string {
  const path = [process.env.CHROMIUM_PATH, ...CANDIDATES].find((p): p is string => !!p && existsSync(p));
  if (!path) throw new Error(`no Chromium found (looked at ${CANDIDATES.join(', ')}): run npm test (it installs Debian's chromium), apt-get install chromium, or set CHROMIUM_PATH`);
  return path;
}

export function launchChromium(): Promise<Browser> {
  // --no-sandbox: the tests may run as root (CI does), where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}
