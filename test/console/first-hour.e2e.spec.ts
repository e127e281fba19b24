import { rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { serveConsole } from '../../src/console/serve-console';
import { bearer, startHttpLedger, type HttpLedger } from '../http/support/http-ledger';
import { accessibilityViolations, DESKTOP, DOCS_DIRECTORY, launchBrowser, MAX_DOCS_SCREENSHOT_BYTES, PHONE, type TestBrowser } from './support/browser';
import { buildConsole } from './support/console-build';

const DEMO_ORG = 'demo-org';
/** Granted a little, never charged: its usage is empty, its available credits a flat line. */
const QUIET_ORG = 'quiet-org';
/** Never granted, never run: nothing at all to show. */
const EMPTY_ORG = 'empty-org';
/** The README's demo request, as its curl line sends it, with a key so its id is the same every run. */
const DEMO_REQUEST = { operationId: 'demo.arithmetic', organizationId: DEMO_ORG, input: { question: 'What is (6+1)*6?' } };

/** Types a token into the sign-in form and sends it, as a keyboard user would. */
async function submitToken(page: Page, token: string): Promise<void> {
  await page.getByLabel('Bearer token').waitFor();
  await page.keyboard.type(token);
  await page.keyboard.press('Enter');
}

async function signIn(page: Page, token: string): Promise<void> {
  await submitToken(page, token);
  await page.getByLabel('Bearer token').waitFor({ state: 'detached' });
}

/** The visible tick labels of a chart's x axis, with their boxes. */
async function xTickLabels(page: Page, chart: string): Promise<Array<{ text: string; left: number; right: number }>> {
  // A string, run in the page: the test's own types have no DOM.
  return page.evaluate(`(() => {
    const axis = document.querySelector(${JSON.stringify(chart)}).querySelector('svg [aria-label="x-axis tick label"]');
    return [...axis.querySelectorAll('text')]
      .filter((text) => (text.textContent || '') !== '')
      .map((text) => { const box = text.getBoundingClientRect(); return { text: text.textContent, left: box.left, right: box.right }; });
  })()`);
}

describe('The console’s first hour (issue 26, findings 4–8): sign-in checked, each role at home, words for nothing, screenshots of the demo', () => {
  let ledger: HttpLedger;
  let consoleDirectory: string;
  let browser: TestBrowser;
  let base: string;
  let demoRun: { invocationId: string; charge: number };

  beforeAll(async () => {
    consoleDirectory = buildConsole();
    ledger = await startHttpLedger({ env: { LEDGER_DEMO: '1' }, configure: (app) => serveConsole(app, consoleDirectory) });
    await ledger.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(ledger.app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchBrowser();
    await ledger.http().post(`/v1/organizations/${QUIET_ORG}/grants`).set(bearer('demo-system-token')).send({ credits: 2_500, reason: 'trial', idempotencyKey: 'quiet-trial' }).expect(200);
    demoRun = (await ledger.http().post('/v1/invocations').set(bearer('demo-member-token')).set('Idempotency-Key', 'readme-screenshot').send(DEMO_REQUEST).expect(200)).body;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await ledger?.close();
    if (consoleDirectory !== undefined) rmSync(consoleDirectory, { recursive: true, force: true });
  });

  it('refuses a token the service does not know on the sign-in form itself, and keeps nothing of it', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console`);
      await submitToken(page, 'not-a-token');
      await page.getByRole('status').filter({ hasText: 'The service did not accept that token' }).waitFor();
      await expect(page.getByLabel('Bearer token').count()).resolves.toBe(1);
      await expect(page.evaluate('Object.values(sessionStorage)')).resolves.toEqual([]);
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
    });
  });

  it.each([
    ['demo-member-token', 'a member of demo-org'],
    ['demo-admin-token', 'an admin of demo-org'],
  ])('lands %s on its organization’s page and says who signed in', async (token, who) => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console`);
      await signIn(page, token);
      await page.getByRole('heading', { name: `Organization ${DEMO_ORG}` }).waitFor();
      expect(page.url()).toBe(`${base}/console/organizations/${DEMO_ORG}`);
      await expect(page.locator('.top .who').textContent()).resolves.toBe(`Signed in as ${who}`);
    });
  });

  it('starts operators and auditors on a search across organizations, operations and invocations', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console`);
      await signIn(page, 'demo-auditor-token');
      await expect(page.locator('.top .who').textContent()).resolves.toBe('Signed in as an auditor');
      const search = page.getByRole('region', { name: 'Find an organization, operation or invocation' });
      const find = async (id: string): Promise<void> => {
        await search.getByLabel('Organization, operation or invocation id').fill(id);
        await search.getByRole('button', { name: 'Search' }).click();
      };
      await find(DEMO_ORG);
      await search.getByRole('list', { name: `Results for ${DEMO_ORG}` }).waitFor();
      await expect(search.getByRole('listitem').allTextContents()).resolves.toEqual([`Organization ${DEMO_ORG} — 999,993 credits available`]);
      await find('demo.arithmetic');
      // The list is drawn only once the search is done: wait for it before reading its items.
      const operationResults = search.getByRole('list', { name: 'Results for demo.arithmetic' });
      await operationResults.waitFor();
      await expect(operationResults.getByRole('listitem').allTextContents()).resolves.toEqual([
        'Operation demo.arithmetic — 1 publication version',
      ]);
      await find(demoRun.invocationId);
      await search.getByRole('link', { name: demoRun.invocationId }).waitFor();
      await find('no-such-thing');
      await search.getByText('No organization, operation or invocation has the id no-such-thing.').waitFor();
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await search.getByLabel('Organization, operation or invocation id').fill(DEMO_ORG);
      await search.getByRole('button', { name: 'Search' }).click();
      await search.getByRole('link', { name: DEMO_ORG }).click();
      await page.getByRole('heading', { name: `Organization ${DEMO_ORG}` }).waitFor();
    });
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console`);
      await signIn(page, 'demo-system-token');
      await expect(page.locator('.top .who').textContent()).resolves.toBe('Signed in as an operator (system)');
      await page.getByRole('region', { name: 'Find an organization, operation or invocation' }).waitFor();
    });
  });

  it('says in words that an organization has no usage, no ledger entries or no invocations, instead of blank charts', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${QUIET_ORG}`);
      await signIn(page, 'demo-auditor-token');
      const perDay = page.getByRole('region', { name: 'Credits used per day by operation' });
      await perDay.getByText(/^No usage in this period: no invocation was charged from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d\.$/).waitFor();
      await expect(perDay.locator('svg').count()).resolves.toBe(0);
      const byKey = page.getByRole('region', { name: 'Credits by gateway key and model' });
      await byKey.getByText(/^No gateway key was charged from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d\.$/).waitFor();
      await expect(byKey.locator('svg').count()).resolves.toBe(0);
      // Granted, never charged: the available credits are a flat line at the grant.
      const available = page.getByRole('region', { name: 'Available credits' });
      await available.locator('.available-line path').waitFor({ state: 'attached' });
      await expect(available.getByRole('figure').getAttribute('aria-label')).resolves.toContain('2,500 credits at the end');
      await page.getByText(`No invocations yet: nothing has run for ${QUIET_ORG}.`).waitFor();

      await page.goto(`${base}/console/organizations/${EMPTY_ORG}`);
      await page.getByText('No ledger entries yet: nothing was granted to empty-org, and nothing has run.').waitFor();
      await available.getByText('No credits yet: nothing was ever granted to this organization.').waitFor();
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
    });
  });

  it.each([
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ])('labels the per-day axis readably at %s width, today’s bar included, beside the available credits over time', async (_name, viewport) => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, 'demo-auditor-token');
      const perDay = page.getByRole('region', { name: 'Credits used per day by operation' });
      await perDay.locator('.usage-bars rect').first().waitFor();
      const labels = await xTickLabels(page, '[aria-labelledby="per-day-heading"] .chart');
      const today = new Date().toISOString().slice(5, 10);
      expect(labels.at(-1)?.text).toBe(today);
      expect(labels.length).toBeGreaterThan(1);
      // No two labels overlap.
      for (let index = 1; index < labels.length; index++) expect(labels[index]!.left).toBeGreaterThanOrEqual(labels[index - 1]!.right);
      await page.getByRole('region', { name: 'Available credits' }).locator('.available-line path').waitFor({ state: 'attached' });
      await expect(page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')).resolves.toBe(0);
    }, viewport);
  });

  it('serves /favicon.ico, so no page load asks for a file it does not get', async () => {
    const icon = await fetch(`${base}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/x-icon');
    expect(Buffer.from(await icon.arrayBuffer()).subarray(0, 4)).toEqual(Buffer.from([0, 0, 1, 0]));
  });

  it('writes the README’s screenshots from the demo: its invocation and its organization, as the auditor sees them', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/invocations/${demoRun.invocationId}`);
      await signIn(page, 'demo-auditor-token');
      const explanation = await ledger.http().get(`/v1/invocations/${demoRun.invocationId}/explanation`).set(bearer('demo-auditor-token')).expect(200);
      expect(explanation.body.sentence).toContain('Completed: answer accepted after 2 of 6 turns; 1 of 6 tool calls; spent 7 of a 5000-credit hold; no retries.');
      await page.getByRole('region', { name: 'Lifecycle' }).getByText('InvocationSettled').waitFor();
      await page.locator('.attempt-bars rect').first().waitFor();
      await page.screenshot({ path: join(DOCS_DIRECTORY, 'console-invocation.png'), fullPage: true });

      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await page.locator('.usage-bars rect').first().waitFor();
      await page.locator('.available-line path').waitFor({ state: 'attached' });
      await page.getByRole('region', { name: 'Ledger, newest first' }).locator('tbody tr').first().waitFor();
      await page.screenshot({ path: join(DOCS_DIRECTORY, 'console-organization.png'), fullPage: true });
    });
    for (const name of ['console-invocation.png', 'console-organization.png']) {
      expect(statSync(join(DOCS_DIRECTORY, name)).size).toBeLessThan(MAX_DOCS_SCREENSHOT_BYTES);
    }
  });
});
