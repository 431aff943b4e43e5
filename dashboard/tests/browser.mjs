// The system Chromium (Debian's `chromium`), headless, driven by
// playwright-core, with a fresh profile and no background traffic (this
// machine's network is closed: Chromium's own connections get refused).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

/**
 * `{context, close}`: Chromium at CHROMIUM (default /usr/bin/chromium) with
 * a fresh profile (`--user-data-dir`, which Playwright passes for a
 * persistent context), removed again by `close`.
 */
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), 'wray-dashboard-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
    viewport: { width: 1280, height: 800 },
  });
  return {
    context,
    close: async () => { await context.close(); rmSync(profile, { recursive: true, force: true }); },
  };
}
