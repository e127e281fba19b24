import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Locator, Page } from 'playwright-core';
import { serveConsole } from '../../src/console/serve-console';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { scriptedFault, scriptedToolUse } from '../../src/runtime';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { accessibilityViolations, launchBrowser, PHONE, type TestBrowser } from './support/browser';
import { buildConsole } from './support/console-build';

const DEMO_MEMBER = 'demo-member-token';
const DEMO_AUDITOR = 'demo-auditor-token';
const DEMO_SYSTEM = 'demo-system-token';
const DEMO_ORG = 'demo-org';
/** An organization with too few credits for the demo's 5,000-credit hold. */
const POOR_ORG = 'globex';
const POOR_ORG_CREDITS = 10;

/** Three attempts over two turns: an overloaded try (billed, it reported usage), its retry, the answer. */
const RETRYING_OPERATION = 'console.retry';
const retrying = scriptedFeature(RETRYING_OPERATION, function* () {
  yield scriptedFault('overloaded', { httpStatus: 529, usage: usage(50) });
  yield scriptedToolUse([{ id: 'lookup-1', name: 'lookup', input: {} }], { usage: usage(10, 1) });
  yield scriptedToolUse([{ id: 'answer-1', name: 'submit_answer', input: { value: 42 } }], { usage: usage(10, 2) });
});

/** A model that keeps asking for tools, under a publication allowing one turn: ended by maxTurns. */
const LIMITED_OPERATION = 'console.limit';
const limited = scriptedFeature(LIMITED_OPERATION, function* () {
  for (let turn = 1; ; turn++) yield scriptedToolUse([{ id: `lookup-${turn}`, name: 'lookup', input: {} }], { usage: usage(10, 1) });
});

/** An operation only published, twice, for the operation page. */
const CATALOG_OPERATION = 'console.catalog';

/** One tool turn, then an answer held back until the test lets it go: an invocation seen running. */
const HELD_OPERATION = 'console.held';
const held = { entered: () => {}, release: () => {} };
const holding = scriptedFeature(HELD_OPERATION, function* () {
  yield scriptedToolUse([{ id: 'lookup-1', name: 'lookup', input: {} }], { usage: usage(10, 1) });
  yield async () => {
    const released = new Promise<void>((resolve) => (held.release = resolve));
    held.entered();
    await released;
    return scriptedToolUse([{ id: 'answer-1', name: 'submit_answer', input: { value: 42 } }], { usage: usage(10, 2) });
  };
});

/** Signs in on whatever page is open: the one labelled input, then Enter, as a keyboard user would. */
async function signIn(page: Page, token: string): Promise<void> {
  const input = page.getByLabel('Bearer token');
  await input.waitFor();
  // The field has the focus when the page opens.
  await page.keyboard.type(token);
  await page.keyboard.press('Enter');
  await input.waitFor({ state: 'detached' });
}

const integer = (text: string): number => Number(text.replace(/[^0-9-]/g, ''));

/** Reads until the page shows `expected` (the page updates on its own time), then asserts it. */
async function until<T>(read: () => Promise<T>, expected: T, { tries = 200, pauseMs = 50 } = {}): Promise<void> {
  let seen = await read();
  for (let attempt = 1; attempt < tries && !Object.is(seen, expected); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    seen = await read();
  }
  expect(seen).toBe(expected);
}

/** A definition list's figures as name → text. */
async function figures(list: Locator): Promise<Record<string, string>> {
  const names = await list.locator('dt').allTextContents();
  const values = await list.locator('dd').allTextContents();
  return Object.fromEntries(names.map((name, index) => [name, values[index] ?? '']));
}

describe('The console (issue 18) in headless Chromium: pages read from the public API with the signed-in token', () => {
  let ledger: HttpLedger;
  let consoleDirectory: string;
  let browser: TestBrowser;
  let base: string;
  let retried: { invocationId: string; charge: number };
  let refused: { invocationId: string };
  let limitedRun: { invocationId: string };

  beforeAll(async () => {
    consoleDirectory = buildConsole();
    ledger = await startHttpLedger({
      env: { LEDGER_DEMO: '1' },
      features: [retrying, holding, limited],
      configure: (app) => serveConsole(app, consoleDirectory),
    });
    await ledger.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(ledger.app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchBrowser();

    const system = bearer(DEMO_SYSTEM);
    for (const operationId of [RETRYING_OPERATION, HELD_OPERATION]) {
      await ledger.http().put(`/v1/operations/${operationId}/publications`).set(system).send(publicationBody()).expect(200);
    }
    await ledger
      .http()
      .post(`/v1/organizations/${POOR_ORG}/grants`)
      .set(system)
      .send({ credits: POOR_ORG_CREDITS, reason: 'trial', idempotencyKey: 'console-trial' })
      .expect(200);
    await ledger
      .http()
      .put(`/v1/operations/${LIMITED_OPERATION}/publications`)
      .set(system)
      .send(publicationBody({ limits: { ...(publicationBody().limits as object), maxTurns: 1 } }))
      .expect(200);
    // An operation published twice: the second version changes the hold, a limit, a price and the model.
    await ledger.http().put(`/v1/operations/${CATALOG_OPERATION}/publications`).set(system).send(publicationBody()).expect(200);
    const second = publicationBody({ creditHold: 2_000, routing: { provider: 'scripted', model: 'scripted-model-2' } });
    second.limits = { ...(second.limits as object), maxTurns: 4 };
    second.prices = { ...(second.prices as object), outputPerMTok: 16_000_000 };
    await ledger.http().put(`/v1/operations/${CATALOG_OPERATION}/publications`).set(system).send(second).expect(200);
    const run = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(DEMO_MEMBER))
      .send({ operationId: RETRYING_OPERATION, organizationId: DEMO_ORG, input: { question: 'What is the answer?' } })
      .expect(200);
    retried = run.body;
    const refusal = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.globexMember))
      .send({ operationId: 'demo.arithmetic', organizationId: POOR_ORG, input: { question: 'What is 6*7?' } })
      .expect(200);
    expect(refusal.body).toMatchObject({ state: 'refused', refusalReason: 'insufficient_credits' });
    refused = refusal.body;
    // Enough account entries for a second ledger page (a hold, a charge and a release each).
    for (let run = 0; run < 5; run++) {
      await ledger
        .http()
        .post('/v1/invocations')
        .set(bearer(DEMO_MEMBER))
        .send({ operationId: 'demo.arithmetic', organizationId: DEMO_ORG, input: { question: `What is ${run}+1?` } })
        .expect(200);
    }
    limitedRun = (
      await ledger
        .http()
        .post('/v1/invocations')
        .set(bearer(DEMO_MEMBER))
        .send({ operationId: LIMITED_OPERATION, organizationId: DEMO_ORG, input: { question: 'What is the answer?' } })
        .expect(200)
    ).body;
  }, 120_000);

  /** The id of the one invocation of `operationId` in the log (the POST answers only once it settles). */
  async function invocationOf(operationId: string): Promise<string> {
    const estimated = (await ledger.app.get<EventStore>(EVENT_STORE).readAll()).filter(
      (event) => event.type === 'InvocationEstimated' && (event.data as { operationId?: string }).operationId === operationId,
    );
    expect(estimated).toHaveLength(1);
    return estimated[0]!.streamName.replace(/^invocation-/, '');
  }

  afterAll(async () => {
    await browser?.close();
    await ledger?.close();
    if (consoleDirectory !== undefined) rmSync(consoleDirectory, { recursive: true, force: true });
  });

  it('asks for the token on a pasted invocation link, then shows the explanation and one waterfall bar per attempt whose prices sum to the charge', async () => {
    await browser.withPage(async (page) => {
      const address = `${base}/console/invocations/${retried.invocationId}`;
      await page.goto(address);
      await page.getByLabel('Bearer token').waitFor();
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await signIn(page, DEMO_MEMBER);
      // The page asked for is the page shown, and the token went nowhere near the address.
      expect(page.url()).toBe(address);
      expect(await page.evaluate('Object.values(sessionStorage)')).toEqual([DEMO_MEMBER]);

      const explanation = await ledger.http().get(`/v1/invocations/${retried.invocationId}/explanation`).set(bearer(DEMO_MEMBER)).expect(200);
      const region = page.getByRole('region', { name: 'Explanation' });
      await expect(region.locator('.sentence').textContent()).resolves.toBe(explanation.body.sentence);
      expect(explanation.body.sentence).toContain('Completed');

      const attempts = page.getByRole('region', { name: 'Attempts', exact: true });
      await attempts.locator('.attempt-bars rect').first().waitFor();
      expect(await attempts.locator('.attempt-bars rect').count()).toBe(3);
      // The one retry waited before it was sent: its wait is drawn too.
      expect(await attempts.locator('.wait-bars rect').count()).toBe(1);
      const prices = (await attempts.locator('tbody td.price').allTextContents()).map(integer);
      expect(prices).toHaveLength(3);
      expect(prices.reduce((sum, price) => sum + price, 0)).toBe(retried.charge);
      expect(integer((await attempts.locator('tfoot .total-price').textContent()) ?? '')).toBe(retried.charge);
      await expect(attempts.locator('.attempts-total').textContent()).resolves.toContain(`3 attempts, priced at ${retried.charge} credits — charged ${retried.charge} credits`);
      await expect(region.getByText('completed → settled: charged the sum of its attempt prices').count()).resolves.toBe(1);

      // The member may not read the log, but follows the invocation's own event stream (SSE).
      const lifecycle = page.getByRole('region', { name: 'Lifecycle' });
      await lifecycle.getByText('InvocationSettled').waitFor();
      const types = await lifecycle.locator('li strong').allTextContents();
      expect(types[0]).toBe('InvocationEstimated');
      expect(types.filter((type) => type === 'AttemptRecorded')).toHaveLength(3);

      // The session outlives a reload, in this tab.
      await page.reload();
      await region.locator('.sentence').waitFor();
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'invocation-member');
    });
  });

  it('shows a refused invocation’s reason and the figures behind it', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/invocations/${refused.invocationId}`);
      await signIn(page, TOKENS.globexMember);
      const region = page.getByRole('region', { name: 'Explanation' });
      await region.getByRole('heading', { name: 'Refused: insufficient_credits' }).waitFor();
      await expect(figures(region.getByLabel('Refusal figures'))).resolves.toMatchObject({ available: '10', 'credit hold': '5,000' });
      await expect(region.locator('.sentence').textContent()).resolves.toContain('insufficient_credits');
      await expect(page.getByRole('region', { name: 'Attempts', exact: true }).textContent()).resolves.toContain('No provider attempt was made');
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'invocation-refused');
    });
  });

  it('names the limit that ended a conversation with the operation and publication version it came from', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/invocations/${limitedRun.invocationId}`);
      await signIn(page, DEMO_MEMBER);
      const region = page.getByRole('region', { name: 'Explanation' });
      await region.getByRole('heading', { name: 'Ended by maxTurns' }).waitFor();
      await expect(region.locator('.sentence').textContent()).resolves.toContain('Ended by turn_limit');
      await expect(region.getByText('maxTurns = 1, as published in').textContent()).resolves.toBe(
        `maxTurns = 1, as published in ${LIMITED_OPERATION} version 1.`,
      );
      await expect(region.getByRole('link', { name: LIMITED_OPERATION }).getAttribute('href')).resolves.toBe(`/console/operations/${LIMITED_OPERATION}`);
    });
  });

  it('can be used from the keyboard alone: skip to the content, follow a link, land on the new page’s content', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/invocations/${retried.invocationId}`);
      await signIn(page, DEMO_MEMBER);
      await page.getByRole('region', { name: 'Explanation' }).locator('.sentence').waitFor();
      await page.keyboard.press('Tab');
      await expect(page.evaluate('document.activeElement.textContent')).resolves.toBe('Skip to content');
      await page.keyboard.press('Enter');
      // Tab from the content's start to the operation's link, then follow it.
      for (let step = 0; step < 10; step++) {
        await page.keyboard.press('Tab');
        if ((await page.evaluate('document.activeElement.textContent')) === RETRYING_OPERATION) break;
      }
      await expect(page.evaluate('document.activeElement.textContent')).resolves.toBe(RETRYING_OPERATION);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: `Operation ${RETRYING_OPERATION}` }).waitFor();
      expect(page.url()).toBe(`${base}/console/operations/${RETRYING_OPERATION}?organization=${DEMO_ORG}`);
      await expect(page.evaluate('document.activeElement.id')).resolves.toBe('main');
      await expect(page.title()).resolves.toBe(`Operation ${RETRYING_OPERATION} — llm-ledger console`);
      // The member may not read the publications, but sees its organization's invocations under each version.
      const under = page.getByRole('region', { name: 'Invocations under each version' });
      await under.getByRole('heading', { name: 'Version 1: 1 invocation' }).waitFor();
      await expect(under.getByRole('link', { name: retried.invocationId }).count()).resolves.toBe(1);
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
    });
  });

  it('says not found when the demo member opens another organization’s invocation, and shows none of it', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/invocations/${refused.invocationId}`);
      await signIn(page, DEMO_MEMBER);
      await page.getByRole('heading', { name: 'Invocation not found' }).waitFor();
      await expect(page.getByRole('alert').textContent()).resolves.toContain('Not found');
      await expect(page.locator('main').textContent()).resolves.not.toContain(POOR_ORG);
    });
  });

  it('lets the auditor read every organization and an invocation’s whole lifecycle from the log', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_AUDITOR);
      const balance = page.getByRole('region', { name: 'Balance' });
      await balance.getByLabel('Balance figures').waitFor();
      await expect(figures(balance.getByLabel('Balance figures'))).resolves.toMatchObject({ Granted: '1,000,000' });

      await page.goto(`${base}/console/organizations/${POOR_ORG}`);
      await page.getByRole('heading', { name: `Organization ${POOR_ORG}` }).waitFor();
      await balance.getByLabel('Balance figures').waitFor();
      await expect(figures(balance.getByLabel('Balance figures'))).resolves.toMatchObject({ Available: '10', Granted: '10' });

      await page.goto(`${base}/console/invocations/${retried.invocationId}`);
      const lifecycle = page.getByRole('region', { name: 'Lifecycle' });
      await lifecycle.getByText('InvocationSettled').waitFor();
      const types = await lifecycle.locator('li strong').allTextContents();
      expect(types[0]).toBe('InvocationEstimated');
      expect(types.filter((type) => type === 'AttemptRecorded')).toHaveLength(3);
      expect(types[types.length - 1]).toBe('InvocationSettled');
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'invocation-auditor');
    });
  });

  it('follows a running invocation live: the page updates to settled without a reload', async () => {
    await browser.withPage(async (page) => {
      const entered = new Promise<void>((resolve) => (held.entered = resolve));
      const run = ledger
        .http()
        .post('/v1/invocations')
        .set(bearer(DEMO_MEMBER))
        .send({ operationId: HELD_OPERATION, organizationId: DEMO_ORG, input: { question: 'What is the answer?' } })
        .then((response) => response.body as { invocationId: string; charge: number });
      await entered;
      const invocationId = await invocationOf(HELD_OPERATION);
      // The page reads the state, the explanation and the attempts side by side, so an attempts answer
      // may come from just before the last commit while the state's comes from after it. Here the
      // attempts are answered as they were while it ran until the page has shown it settled: the
      // page must read them again rather than stop with one attempt of two.
      let attemptsWhileRunning: string | undefined;
      let settledShown = false;
      let readAgainAfterSettled = false;
      await page.route(`**/v1/invocations/${invocationId}/attempts`, async (route) => {
        if (attemptsWhileRunning !== undefined && !settledShown) return route.fulfill({ status: 200, contentType: 'application/json', body: attemptsWhileRunning });
        if (settledShown) readAgainAfterSettled = true;
        return route.continue();
      });

      await page.goto(`${base}/console/invocations/${invocationId}`);
      await signIn(page, DEMO_MEMBER);
      await page.getByRole('status').filter({ hasText: 'live' }).waitFor();
      await expect(page.locator('.summary .badge').first().textContent()).resolves.toBe('dispatched');
      await page.locator('.attempt-bars rect').first().waitFor();
      expect(await page.locator('.attempt-bars rect').count()).toBe(1);
      // The timeline follows the event stream: the attempt is there before the invocation ends.
      const lifecycle = page.getByRole('region', { name: 'Lifecycle' });
      await lifecycle.getByText('AttemptRecorded').waitFor();
      await browser.screenshot(page, 'invocation-live');

      attemptsWhileRunning = JSON.stringify((await ledger.http().get(`/v1/invocations/${invocationId}/attempts`).set(bearer(DEMO_MEMBER)).expect(200)).body);
      held.release();
      const settled = await run;
      await page.locator('.summary .badge', { hasText: 'settled' }).waitFor();
      settledShown = true;
      await until(async () => readAgainAfterSettled, true);
      await page.getByRole('status').filter({ hasText: 'live' }).waitFor({ state: 'detached' });
      // The chart is drawn after the render that ends "live" (PlotFigure draws in an effect).
      await page.locator('.attempt-bars rect').nth(1).waitFor();
      expect(await page.locator('.attempt-bars rect').count()).toBe(2);
      await lifecycle.getByText('InvocationSettled').waitFor();
      expect(integer((await page.locator('tfoot .total-price').textContent()) ?? '')).toBe(settled.charge);
    });
  });

  it('shows an organization’s credits per day by operation, its ledger page by page, and its invocations filtered, each linking to its page', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_AUDITOR);
      const auditor = bearer(DEMO_AUDITOR);

      // The chart: one bar per operation that was charged today, as the usage statement says.
      const today = new Date().toISOString().slice(0, 10);
      const usage = await ledger.http().get(`/v1/organizations/${DEMO_ORG}/usage`).query({ from: today, to: today, groupBy: 'day,operation' }).set(auditor).expect(200);
      const charged = (usage.body.rows as { credits: number }[]).filter((row) => row.credits > 0);
      expect(charged.length).toBeGreaterThan(1);
      const chart = page.getByRole('region', { name: 'Credits used per day by operation' });
      await chart.locator('.usage-bars rect').first().waitFor();
      expect(await chart.locator('.usage-bars rect').count()).toBe(charged.length);
      await expect(chart.locator('.chart').getAttribute('aria-label')).resolves.toContain(`${usage.body.totals.credits.toLocaleString('en-US')} credits in all`);

      // The ledger, page by page, as the API pages it.
      const entries: unknown[] = [];
      let cursor: string | null = null;
      do {
        const response: { body: { entries: unknown[]; nextCursor: string | null } } = await ledger.http().get(`/v1/organizations/${DEMO_ORG}/ledger`).query(cursor === null ? { limit: 500 } : { limit: 500, cursor }).set(auditor).expect(200);
        entries.push(...response.body.entries);
        cursor = response.body.nextCursor;
      } while (cursor !== null);
      expect(entries.length).toBeGreaterThan(20);
      // Newest first, as every list of the console, each amount signed by what it does to the available credits.
      expect(entries.length).toBeLessThanOrEqual(40);
      const balanceNow = await ledger.http().get(`/v1/organizations/${DEMO_ORG}/balance`).set(auditor).expect(200);
      const ledgerRegion = page.getByRole('region', { name: 'Ledger, newest first', exact: true });
      const rows = ledgerRegion.locator('tbody tr');
      await rows.first().waitFor();
      expect(await rows.count()).toBe(20);
      expect(integer((await rows.first().locator('td').last().textContent()) ?? '')).toBe(balanceNow.body.available);
      for (const row of await rows.all()) {
        const [kind, credits] = [await row.locator('td').nth(1).textContent(), await row.locator('td.credits').textContent()];
        if (kind === 'hold' || kind === 'charge') expect(credits).toMatch(/^(−\d|0 )/);
        if (kind === 'release') expect(credits).toMatch(/^\+/);
      }
      await ledgerRegion.getByRole('button', { name: 'Next page' }).click();
      await ledgerRegion.getByText('Page 2', { exact: true }).waitFor();
      await until(() => rows.count(), entries.length - 20);
      // The oldest entry, last of the last page: the demo's grant, signed as money in.
      await expect(rows.last().textContent()).resolves.toContain('grant');
      await expect(rows.last().locator('td.credits').textContent()).resolves.toBe('+1,000,000 credits');
      await ledgerRegion.getByRole('button', { name: 'Previous page' }).click();
      await ledgerRegion.getByText('Page 1', { exact: true }).waitFor();
      expect(integer((await rows.first().locator('td').last().textContent()) ?? '')).toBe(balanceNow.body.available);
      await browser.screenshot(page, 'organization-auditor');

      // The invocations, filtered by operation, each linking to its own page.
      const invocations = page.getByRole('region', { name: 'Invocations, newest first' });
      await invocations.getByLabel('Operation id').fill(RETRYING_OPERATION);
      await invocations.getByRole('button', { name: 'Apply filters' }).click();
      await until(() => invocations.locator('tbody tr').count(), 1);
      await invocations.getByRole('link', { name: retried.invocationId }).click();
      await page.getByRole('heading', { name: `Invocation ${retried.invocationId}` }).waitFor();

      // Another organization, filtered by state.
      await page.goto(`${base}/console/organizations/${POOR_ORG}`);
      await invocations.getByLabel('State').selectOption('refused');
      await invocations.getByRole('button', { name: 'Apply filters' }).click();
      await until(() => invocations.locator('tbody tr').count(), 1);
      await expect(invocations.locator('tbody tr').first().textContent()).resolves.toContain('insufficient_credits');
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
    });
  });

  it('shows an operation’s publication versions as a timeline with what each changed, to the auditor only', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/operations/${CATALOG_OPERATION}`);
      await signIn(page, DEMO_AUDITOR);
      const versions = page.getByRole('region', { name: 'Publication versions' });
      await versions.getByRole('heading', { name: /^Version 2/ }).waitFor();
      await expect(versions.getByRole('heading', { name: /^Version \d/ }).allTextContents()).resolves.toEqual(['Version 1 ', 'Version 2 in force']);
      const changes = await versions.getByRole('list', { name: 'Changes in version 2' }).getByRole('listitem').allTextContents();
      expect(changes).toEqual([
        'routing.model: scripted-model → scripted-model-2',
        'limits.maxTurns: 6 → 4',
        'prices.outputPerMTok: 15,000,000 → 16,000,000',
        'creditHold: 1,000 → 2,000',
      ]);
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'operation-auditor');
    });
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/operations/${CATALOG_OPERATION}`);
      await signIn(page, DEMO_MEMBER);
      await expect(page.getByRole('region', { name: 'Publication versions' }).getByRole('note').textContent()).resolves.toContain('may not read the publications');
      // No organization named yet: the page asks for one rather than guessing.
      await expect(page.getByLabel('Organization id').inputValue()).resolves.toBe('');
    });
  });

  it('fits a phone’s width without sideways scrolling of the pages', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/invocations/${retried.invocationId}`);
      await signIn(page, DEMO_MEMBER);
      await page.locator('.attempt-bars rect').first().waitFor();
      const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow).toBe(0);
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'invocation-phone');

      // The organization page, as the member sees it: its invocations, and what its role may not read.
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await page.getByRole('region', { name: 'Invocations, newest first' }).locator('tbody tr').first().waitFor();
      await expect(page.getByRole('region', { name: 'Balance' }).getByRole('note').textContent()).resolves.toBe('Your token’s role may not read the balance.');
      await expect(page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')).resolves.toBe(0);
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'organization-phone');
    }, PHONE);
  });

  it('serves the app for every page address and its assets as files, without a token, and leaves the API’s 404s alone', async () => {
    for (const path of ['/console', '/console/', `/console/invocations/${retried.invocationId}`, '/console/organizations/x', '/console/operations/demo.arithmetic']) {
      const response = await fetch(`${base}${path}`, { redirect: 'manual' });
      expect({ path, status: response.status, type: response.headers.get('content-type') }).toEqual({ path, status: 200, type: expect.stringContaining('text/html') });
      expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
      await expect(response.text()).resolves.toContain('<div id="app">');
    }
    const html = await (await fetch(`${base}/console`)).text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${base}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${base}/console/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${base}/v1/invocations/${retried.invocationId}`)).status).toBe(401);
  });
});
