import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium package (`.ci/run` installs it); CHROMIUM_PATH points elsewhere. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where screenshots go: a test artifact, ignored by git. */
export const ARTIFACTS_DIRECTORY = join(__dirname, '..', '..', '..', 'test-artifacts', 'console');

/** Where the README's and docs' screenshots go: made by the browser tests from the demo, so they show what it does. */
export const DOCS_DIRECTORY = join(__dirname, '..', '..', '..', 'docs');
/** Largest screenshot written into docs/, in bytes: the repository carries every version of it. */
export const MAX_DOCS_SCREENSHOT_BYTES = 250 * 1024;

/** 1280×800, and a phone's width. */
export const DESKTOP = { width: 1280, height: 800 } as const;
export const PHONE = { width: 390, height: 844 } as const;

// Only loopback is reachable here: no background traffic, no updates, no first-run screens.
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** axe-core, the accessibility engine, run inside the page (through the debugging protocol, which the page's CSP does not govern). */
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * What axe-core finds against WCAG 2 A and AA on the page as it is now: each rule broken, with the
 * elements that break it. Colour contrast, missing labels and names, landmark and heading problems…
 */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  return page.evaluate(`axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] })
    .then((result) => result.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`);
}

export interface TestBrowser {
  readonly browser: Browser;
  /** A fresh context (its own session storage) with one page at `viewport`. */
  open(viewport?: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page; problems: string[] }>;
  /**
   * Runs `use` on a page of a fresh context and closes it; fails when the page had a script error
   * or refused content (a Content-Security-Policy violation) meanwhile.
   */
  withPage(use: (page: Page) => Promise<void>, viewport?: { width: number; height: number }): Promise<void>;
  screenshot(page: Page, name: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Launches the one browser a test file shares. A missing Chromium fails the file loudly: the
 * console's tests never skip.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium was not found at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM_PATH`);
  }
  // Playwright starts the browser on a fresh, empty profile of its own and deletes it on close.
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_FLAGS });
  mkdirSync(ARTIFACTS_DIRECTORY, { recursive: true });
  const testBrowser: TestBrowser = {
    browser,
    async open(viewport = DESKTOP) {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      // Script errors and refused content (a Content-Security-Policy violation) are defects.
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      // A file the page asked for and did not get (a favicon, an asset) is a defect too; the API's own 404s are answers.
      page.on('response', (response) => {
        if (response.status() === 404 && !new URL(response.url()).pathname.startsWith('/v1/')) problems.push(`404: ${response.url()}`);
      });
      page.on('console', (message) => {
        if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(`console: ${message.text()}`);
      });
      return { context, page, problems };
    },
    async withPage(use, viewport) {
      const { context, page, problems } = await testBrowser.open(viewport);
      try {
        await use(page);
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    },
    async screenshot(page, name) {
      const path = join(ARTIFACTS_DIRECTORY, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
    async close() {
      await browser.close();
    },
  };
  return testBrowser;
}
