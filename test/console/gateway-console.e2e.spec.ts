/**
 * The console shows gateway calls (docs/gateway.md) in headless Chromium: a call's invocation page
 * names its key, model and rate card version, its hold and charge and its one attempt; the
 * organization page lists the gateway keys with what each spent in its period and holds, to the
 * roles that may read them (system, the organization's admin) and to no other.
 */
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { serveConsole } from '../../src/console/serve-console';
import { GATEWAY_ACCOUNTING, type GatewayAccounting, type GatewayAdmission, type MessagesBodyFacts } from '../../src/gateway/gateway-call.port';
import { systemClock } from '../../src/runtime';
import { NO_USAGE } from '../../src/runtime/usage';
import { bearer, startHttpLedger, type HttpLedger } from '../http/support/http-ledger';
import { accessibilityViolations, DESKTOP, launchBrowser, type TestBrowser } from './support/browser';
import { buildConsole } from './support/console-build';
import { figures, signIn } from './support/page-reading';
import { NO_TOOLS } from '../gateway/support/body-facts';

const DEMO_ORG = 'demo-org';
const DEMO_SYSTEM = 'demo-system-token';
const DEMO_ADMIN = 'demo-admin-token';
const DEMO_AUDITOR = 'demo-auditor-token';
const DEMO_MEMBER = 'demo-member-token';
const MODEL = 'claude-sonnet-5-5';
const PRICES = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300 };
const FACTS: MessagesBodyFacts = { bodyBytes: 1_000, model: MODEL, maxTokens: 1_000, stream: true, imageBlocks: 0, documentBlocks: 0, ...NO_TOOLS };

type Admitted = Extract<GatewayAdmission, { admitted: true }>;

/** How upstream answered a settled call: 1,234 input and 56 output tokens, priced at 5 credits. */
const answered = () => ({
  startedAtMs: systemClock.now(),
  durationMs: 840,
  classification: 'ok' as const,
  httpStatus: 200,
  responseModel: `${MODEL}-20261001`,
  usage: { ...NO_USAGE, inputTokens: 1_234, outputTokens: 56 },
  timedOut: false,
  callerDisconnected: false,
});

describe('The console shows gateway calls and keys (docs/gateway.md), in headless Chromium', () => {
  let ledger: HttpLedger;
  let consoleDirectory: string;
  let browser: TestBrowser;
  let base: string;
  let settled: Admitted;
  const keys: { ciBot?: { key: string; keyId: string }; revoked?: { keyId: string } } = {};

  beforeAll(async () => {
    consoleDirectory = buildConsole();
    // What a credit is worth: the console shows money beside credits where the API gives it.
    ledger = await startHttpLedger({ env: { LEDGER_DEMO: '1', LEDGER_CREDIT_VALUE: '0.0001 USD' }, configure: (app) => serveConsole(app, consoleDirectory) });
    await ledger.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(ledger.app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchBrowser();

    const system = bearer(DEMO_SYSTEM);
    await ledger.http().put(`/v1/gateway/models/${MODEL}`).set(system).send({ prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true }).expect(200);
    const issue = async (body: Record<string, unknown>) => (await ledger.http().post(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).send(body).expect(200)).body as { key: string; keyId: string };
    keys.ciBot = await issue({ name: 'ci-bot', spendLimit: { credits: 100_000, period: 'day' } });
    keys.revoked = await issue({ name: 'old-laptop' });
    await ledger.http().delete(`/v1/organizations/${DEMO_ORG}/gateway-keys/${keys.revoked.keyId}`).set(bearer(DEMO_ADMIN)).expect(200);

    const accounting = ledger.app.get<GatewayAccounting>(GATEWAY_ACCOUNTING);
    const admit = async (attribution: Partial<MessagesBodyFacts> = {}, tags?: string[]) =>
      (await accounting.admit({ presentedKey: keys.ciBot!.key, facts: { ...FACTS, ...attribution }, ...(tags === undefined ? {} : { tags }), requestId: 'r' })) as Admitted;
    // Who made it, as Claude Code's metadata.user_id and an x-ledger-tags header say.
    settled = await admit({ userId: 'user-42' }, ['nightly']);
    await accounting.settle(settled, answered());
    // A call still in flight: its hold counts against the key.
    expect((await admit()).admitted).toBe(true);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await ledger?.close();
    if (consoleDirectory !== undefined) rmSync(consoleDirectory, { recursive: true, force: true });
  });

  it('shows a gateway call’s key, model, rate card version, hold and charge, its explanation and its one attempt', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/invocations/${settled.invocationId}`);
      await signIn(page, DEMO_MEMBER);
      const summary = page.getByLabel('Invocation', { exact: true });
      await summary.waitFor();
      await expect(figures(summary)).resolves.toMatchObject({
        'Gateway key': `ci-bot ${keys.ciBot!.keyId}`,
        Model: MODEL,
        'Rate card version': '1',
        'Hold (worst case)': '46 credits',
        Charge: '5 credits',
      });
      await expect(page.locator('.summary .badge', { hasText: 'gateway call' }).count()).resolves.toBe(1);

      const explanation = (await ledger.http().get(`/v1/invocations/${settled.invocationId}/explanation`).set(bearer(DEMO_MEMBER)).expect(200)).body;
      const region = page.getByRole('region', { name: 'Explanation' });
      await expect(region.locator('.sentence').textContent()).resolves.toBe(explanation.sentence);
      expect(explanation.sentence).toBe(`Gateway call by key "ci-bot" to ${MODEL}: 1,234 input and 56 output tokens; held 46, charged 5.`);
      const explained = await figures(region.getByLabel('Figures'));
      expect(explained).toMatchObject({ 'Gateway key': `ci-bot (${keys.ciBot!.keyId})`, Model: MODEL, 'Rate card version': '1', Streamed: 'yes', 'Upstream answer': 'ok, HTTP 200' });
      expect(Object.keys(explained)).not.toContain('Retries');

      const attempts = page.getByRole('region', { name: 'Attempts', exact: true });
      await attempts.locator('.attempt-bars rect').first().waitFor();
      expect(await attempts.locator('.attempt-bars rect').count()).toBe(1);
      expect(await attempts.locator('tbody tr').count()).toBe(1);
      await expect(attempts.locator('.attempts-total').textContent()).resolves.toBe(`1 attempt, priced at 5 credits — charged 5 credits · model ${MODEL}-20261001`);
      // The member follows the call's own event stream: its first line says whose call it is.
      const lifecycle = page.getByRole('region', { name: 'Lifecycle' });
      await lifecycle.getByText('InvocationSettled').waitFor();
      await expect(lifecycle.locator('li').first().textContent()).resolves.toContain(`gateway call by key "ci-bot" to ${MODEL}, rate card version 1, hold 46 credits`);
      await expect(lifecycle.locator('li', { hasText: 'InvocationDispatched' }).textContent()).resolves.toContain('the call was sent upstream');
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'gateway-invocation-member');
    });
  });

  it('lists the organization’s gateway keys for its admin, each with what it spent in its period and what it holds, as the API says', async () => {
    const { keys: listed } = (await ledger.http().get(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).expect(200)).body as {
      keys: { keyId: string; name: string; spentCredits: number; heldCredits: number; period: string; money?: object }[];
    };
    const ciBot = listed.find((key) => key.name === 'ci-bot')!;
    expect(ciBot).toMatchObject({ spentCredits: 5, heldCredits: 46 });
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      const section = page.getByRole('region', { name: 'Gateway keys', exact: true });
      const rows = section.locator('tbody tr');
      await rows.first().waitFor();
      // Other tests issue keys of their own: these two are the ones beforeAll made.
      expect(await rows.filter({ hasText: /^(ci-bot|old-laptop)/ }).count()).toBe(2);
      const row = rows.filter({ hasText: 'ci-bot' });
      await expect(row.locator('td.spent .credits').textContent()).resolves.toBe('5');
      await expect(row.locator('td.held .credits').textContent()).resolves.toBe('46');
      // Money beside credits, as the API says it (LEDGER_CREDIT_VALUE 0.0001 USD).
      expect(ciBot.money).toEqual({ currency: 'USD', spentCredits: '0.0005', heldCredits: '0.0046' });
      await expect(row.locator('td.spent .money').textContent()).resolves.toBe('0.0005 USD');
      await expect(row.locator('td.held .money').textContent()).resolves.toBe('0.0046 USD');
      const balance = (await ledger.http().get(`/v1/organizations/${DEMO_ORG}/balance`).set(bearer(DEMO_ADMIN)).expect(200)).body as { money: { granted: string } };
      expect(balance.money.granted).toBe('100');
      await expect(page.getByLabel('Balance figures').locator('div', { hasText: 'Granted' }).locator('dd').textContent()).resolves.toBe('1,000,000 (100 USD)');
      await expect(page.getByRole('region', { name: 'Credits over time' }).locator('.attempts-total').textContent()).resolves.toMatch(/^[\d,]+ credits \([\d.]+ USD\) charged over /);
      await expect(row.textContent()).resolves.toContain(ciBot.period);
      await expect(row.textContent()).resolves.toContain('100,000 credits a UTC day');
      await expect(rows.filter({ hasText: 'old-laptop' }).textContent()).resolves.toContain('revoked');
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'gateway-keys-admin');
    });
  });

  it('shows a revoked key’s status inside a 1280 px wide window, with no sideways scrolling (issue 33: it was off-screen)', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      const table = page.getByRole('region', { name: 'Gateway keys table' });
      const status = table.locator('tbody tr', { hasText: 'old-laptop' }).locator('td', { hasText: /^revoked/ });
      await status.waitFor();
      const box = (await status.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(DESKTOP.width);
      await expect(table.evaluate((region) => region.scrollWidth - region.clientWidth)).resolves.toBe(0);
    }, DESKTOP);
  });

  it('issues a key from the console: its secret is shown once, with a copy button and a warning that it will not be shown again, and it works', async () => {
    const { context, page, problems } = await browser.open(DESKTOP);
    try {
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      await page.getByRole('button', { name: 'Issue a key' }).click();
      const form = page.getByRole('form', { name: 'Issue a gateway key' });
      await form.getByLabel('Name').fill('console-issued');
      await form.getByLabel('Models').fill(MODEL);
      await form.getByLabel('Spend limit (credits)').fill('2000');
      await form.getByLabel('Limit period').selectOption('day');
      await form.getByRole('button', { name: 'Issue the key' }).click();

      const notice = page.getByRole('region', { name: 'Key “console-issued” issued' });
      await expect(notice.textContent()).resolves.toContain('you will not see it again');
      const secret = await notice.getByLabel('The new key').inputValue();
      expect(secret).toMatch(/^llk_/);
      await notice.getByRole('button', { name: 'Copy the key' }).click();
      await notice.getByText('Copied to the clipboard.').waitFor();
      await expect(page.evaluate('navigator.clipboard.readText()')).resolves.toBe(secret);
      await expect(accessibilityViolations(page)).resolves.toEqual([]);

      // The secret authenticates on the gateway, with the settings the form sent.
      const models = await ledger.http().get('/anthropic/v1/models').set('x-api-key', secret).expect(200);
      expect((models.body as { data: { id: string }[] }).data.map((model) => model.id)).toEqual([MODEL]);
      const { keys: listed } = (await ledger.http().get(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).expect(200)).body as { keys: { name: string }[] };
      expect(listed.find((key) => key.name === 'console-issued')).toMatchObject({ models: [MODEL], spendLimit: { credits: 2_000, period: 'day' } });
      await page.getByRole('region', { name: 'Gateway keys table' }).locator('tbody tr', { hasText: 'console-issued' }).waitFor();

      // Once dismissed, the secret is nowhere on the page.
      await notice.getByRole('button', { name: 'Done: I have kept the key' }).click();
      await notice.waitFor({ state: 'detached' });
      expect(await page.content()).not.toContain(secret);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('changes a key’s name, models, max_tokens cap and spend limit from the console, and names the field the service refuses', async () => {
    const { keyId } = (await ledger.http().post(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).send({ name: 'to-change' }).expect(200)).body as { keyId: string };
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      await page.getByRole('button', { name: 'Change to-change' }).click();
      const form = page.getByRole('form', { name: 'Change the key “to-change”' });
      await form.getByLabel('Largest max_tokens').fill('lots');
      await form.getByRole('button', { name: 'Save the key' }).click();
      await expect(form.getByRole('alert').textContent()).resolves.toMatch(/^The service refused to change the key: maxOutputTokens /);

      await form.getByLabel('Name').fill('changed');
      await form.getByLabel('Models').fill(`${MODEL}, claude-haiku-5`);
      await form.getByLabel('Largest max_tokens').fill('4096');
      await form.getByLabel('Spend limit (credits)').fill('700');
      await form.getByLabel('Limit period').selectOption('total');
      await form.getByRole('button', { name: 'Save the key' }).click();
      await form.waitFor({ state: 'detached' });
      const row = page.getByRole('region', { name: 'Gateway keys table' }).locator('tbody tr', { hasText: keyId });
      // The form closes on the service's answer; the list is read again after it.
      await row.locator('th', { hasText: /^changed/ }).waitFor();
      await expect(row.locator('td.limits').textContent()).resolves.toBe('700 credits in totalmax_tokens ≤ 4,096');
    });
    const { keys: listed } = (await ledger.http().get(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).expect(200)).body as { keys: { keyId: string }[] };
    expect(listed.find((key) => key.keyId === keyId)).toMatchObject({ name: 'changed', models: ['claude-haiku-5', MODEL], maxOutputTokens: 4_096, spendLimit: { credits: 700, period: 'total' } });
  });

  it('sets a key’s expiry and rate limits, and rotates its secret with a grace in which both secrets work, from the console', async () => {
    const { key: first, keyId } = (await ledger.http().post(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).send({ name: 'to-rotate' }).expect(200)).body as { key: string; keyId: string };
    let second = '';
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      await page.getByRole('button', { name: 'Change to-rotate' }).click();
      const change = page.getByRole('form', { name: 'Change the key “to-rotate”' });
      await change.getByLabel('Expires at (UTC)').fill('2030-01-01T00:00');
      await change.getByLabel('Calls in flight at once').fill('4');
      await change.getByLabel('Calls per minute').fill('60');
      await change.getByLabel('Tokens per minute').fill('100000');
      await change.getByRole('button', { name: 'Save the key' }).click();
      const row = page.getByRole('region', { name: 'Gateway keys table' }).locator('tbody tr', { hasText: keyId });
      await row.locator('td.status', { hasText: 'expires 2030-01-01 00:00:00.000 UTC' }).waitFor();
      await expect(row.locator('td.limits').textContent()).resolves.toBe('no spend limit≤ 4 in flight (0 now)≤ 60 calls a minute≤ 100,000 tokens a minute');

      await page.getByRole('button', { name: 'Rotate to-rotate' }).click();
      const rotate = page.getByRole('form', { name: 'Rotate the key “to-rotate”' });
      await rotate.getByLabel('Grace (seconds)').fill('600');
      await rotate.getByRole('button', { name: 'Rotate the secret' }).click();
      const notice = page.getByRole('region', { name: 'Key “to-rotate” rotated: its new secret' });
      await expect(notice.textContent()).resolves.toContain('you will not see it again');
      second = await notice.getByLabel('The new key').inputValue();
      expect(second).toMatch(/^llk_/);
      expect(second).not.toBe(first);
      await row.locator('td.status', { hasText: /rotated; the old secret works until / }).waitFor();
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'gateway-key-rotated');
      const status = (await row.locator('td.status').boundingBox())!;
      expect(status.x + status.width).toBeLessThanOrEqual(DESKTOP.width);
    }, DESKTOP);
    // Within the grace, the old secret and the new one both work.
    for (const secret of [first, second]) await ledger.http().get('/anthropic/v1/models').set('x-api-key', secret).expect(200);
    const { keys: listed } = (await ledger.http().get(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).expect(200)).body as { keys: { keyId: string }[] };
    expect(listed.find((key) => key.keyId === keyId)).toMatchObject({ expiresAt: expect.stringMatching(/^2030-01-01T00:00:00(\.000)?Z$/), maxConcurrent: 4, requestsPerMinute: 60, tokensPerMinute: 100_000 });
  });

  it('revokes a key from the console only once the admin confirms it', async () => {
    const { keyId } = (await ledger.http().post(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).send({ name: 'to-revoke' }).expect(200)).body as { keyId: string };
    const revokedAt = async () => ((await ledger.http().get(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).expect(200)).body as { keys: { keyId: string; revokedAt?: string }[] }).keys.find((key) => key.keyId === keyId)!.revokedAt;
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      const question = page.getByRole('group', { name: 'Revoke the key “to-revoke”?' });
      await page.getByRole('button', { name: 'Revoke to-revoke' }).click();
      await question.getByRole('button', { name: 'Keep it' }).click();
      await question.waitFor({ state: 'detached' });
      await expect(revokedAt()).resolves.toBeUndefined();

      await page.getByRole('button', { name: 'Revoke to-revoke' }).click();
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await question.getByRole('button', { name: 'Revoke “to-revoke”' }).click();
      const status = page.getByRole('region', { name: 'Gateway keys table' }).locator('tbody tr', { hasText: keyId }).locator('td.status');
      await status.getByText('revoked').waitFor();
      await expect(page.getByRole('button', { name: 'Revoke to-revoke' }).count()).resolves.toBe(0);
    });
    await expect(revokedAt()).resolves.toEqual(expect.any(String));
  });

  it('charts the credits each gateway key, user and tag was charged, by model, from the usage statement grouped by key, model and user or tag', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const statement = (await ledger.http().get(`/v1/organizations/${DEMO_ORG}/usage?from=${today}&to=${today}&groupBy=key,model`).set(bearer(DEMO_ADMIN)).expect(200)).body as {
      rows: { keyName?: string; model?: string; credits: number }[];
    };
    expect(statement.rows.filter((row) => row.keyName === 'ci-bot')).toMatchObject([{ model: MODEL, credits: 5 }]);
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      const region = page.getByRole('region', { name: 'Credits by gateway key and model' });
      const bar = region.locator('.spend-bars rect', { hasText: 'ci-bot' });
      await bar.waitFor();
      await expect(bar.textContent()).resolves.toBe(`ci-bot · ${MODEL}: 5 credits`);
      // Other tests charge keys of their own: the figure is the statement's at this moment.
      const now = (await ledger.http().get(`/v1/organizations/${DEMO_ORG}/usage?from=${today}&to=${today}&groupBy=key,model`).set(bearer(DEMO_ADMIN)).expect(200)).body as { rows: { keyId: string; credits: number }[] };
      const charged = now.rows.filter((row) => row.keyId !== '' && row.credits > 0);
      const total = charged.reduce((sum, row) => sum + row.credits, 0);
      const keyCount = new Set(charged.map((row) => row.keyId)).size;
      await expect(region.locator('.chart').getAttribute('aria-label')).resolves.toBe(`Credits charged by key and model: ${total.toLocaleString('en-US')} credits in all, over ${keyCount} ${keyCount === 1 ? 'key' : 'keys'}`);
      await browser.screenshot(page, 'gateway-keys-chart');

      // By who made the calls: their metadata.user_id, then their x-ledger-tags.
      await region.getByLabel('Group by').selectOption('user');
      const byUser = page.getByRole('region', { name: 'Credits by user and model' });
      await expect(byUser.locator('.spend-bars rect', { hasText: 'user-42' }).textContent()).resolves.toBe(`user-42 · ${MODEL}: 5 credits`);
      await byUser.getByLabel('Group by').selectOption('tag');
      const byTag = page.getByRole('region', { name: 'Credits by tag and model' });
      await expect(byTag.locator('.spend-bars rect', { hasText: 'nightly' }).textContent()).resolves.toBe(`nightly · ${MODEL}: 5 credits`);
    });
  });

  it('creates, changes and deletes a team from the console, puts a key in it, and shows what the team’s keys hold and spent in its period, in its row and in the spend chart by team', async () => {
    const { key, keyId } = (await ledger.http().post(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).send({ name: 'team-member-key' }).expect(200)).body as { key: string; keyId: string };
    const teams = async () => ((await ledger.http().get(`/v1/organizations/${DEMO_ORG}/teams`).set(bearer(DEMO_ADMIN)).expect(200)).body as { teams: { teamId: string; name: string }[] }).teams;
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      await page.getByRole('button', { name: 'Create a team' }).click();
      const create = page.getByRole('form', { name: 'Create a team' });
      await create.getByLabel('Name').fill('platform');
      await create.getByLabel('Spend limit (credits)').fill('50000');
      await create.getByLabel('Limit period').selectOption('week');
      await create.getByLabel('Alert at (% of the limit)').fill('50, 90');
      await create.getByRole('button', { name: 'Create the team' }).click();
      const teamRow = page.getByRole('region', { name: 'Teams table' }).locator('tbody tr', { hasText: 'platform' });
      await expect(teamRow.locator('td.limits').textContent()).resolves.toBe('50,000 credits an ISO week, alerts at 50 %, 90 %');
      const team = (await teams()).find((t) => t.name === 'platform')!;
      expect(team).toMatchObject({ spendLimit: { credits: 50_000, period: 'week' }, alertAt: [50, 90] });

      // The key joins the team through its Change form; its call's hold then counts against the team.
      await page.getByRole('button', { name: 'Change team-member-key' }).click();
      const change = page.getByRole('form', { name: 'Change the key “team-member-key”' });
      await change.getByLabel('Team').selectOption({ label: 'platform' });
      await change.getByRole('button', { name: 'Save the key' }).click();
      await change.waitFor({ state: 'detached' });
      await page.getByRole('region', { name: 'Gateway keys table' }).locator('tbody tr', { hasText: keyId }).locator('th', { hasText: 'team platform' }).waitFor();
      const accounting = ledger.app.get<GatewayAccounting>(GATEWAY_ACCOUNTING);
      const admit = async () => (await accounting.admit({ presentedKey: key, facts: FACTS, requestId: 'team' })) as Admitted;
      await accounting.settle(await admit(), answered());
      expect((await admit()).admitted).toBe(true);
      await page.reload();
      await expect(teamRow.locator('td.held').textContent()).resolves.toBe('460.0046 USD');
      await expect(teamRow.locator('td.spent').textContent()).resolves.toBe('50.0005 USD');
      // The spend chart by team names it.
      await page.getByRole('region', { name: 'Credits by gateway key and model' }).getByLabel('Group by').selectOption('team');
      const byTeam = page.getByRole('region', { name: 'Credits by team and model' });
      await expect(byTeam.locator('.spend-bars rect', { hasText: 'platform' }).textContent()).resolves.toBe(`platform · ${MODEL}: 5 credits`);
      await expect(teamRow.locator('td.period').textContent()).resolves.toMatch(/^\d{4}-W\d{2}$/);

      // A team a live key names is not deleted: the service's reason is shown.
      await page.getByRole('button', { name: 'Delete team platform' }).click();
      const question = page.getByRole('group', { name: 'Delete the team “platform”?' });
      await question.getByRole('button', { name: 'Delete “platform”' }).click();
      await expect(question.getByRole('alert').textContent()).resolves.toContain(keyId);
      await question.getByRole('button', { name: 'Keep it' }).click();
      await page.getByRole('button', { name: 'Change team platform' }).click();
      const rename = page.getByRole('form', { name: 'Change the team “platform”' });
      await rename.getByLabel('Name').fill('platform-eng');
      await rename.getByLabel('Spend limit (credits)').fill('');
      await rename.getByRole('button', { name: 'Save the team' }).click();
      // Alerts are percentages of the limit: the service names the field left without one.
      await expect(rename.getByRole('alert').textContent()).resolves.toMatch(/^The service refused to change the team: alertAt needs a spendLimit/);
      await rename.getByLabel('Alert at (% of the limit)').fill('');
      await rename.getByRole('button', { name: 'Save the team' }).click();
      await rename.waitFor({ state: 'detached' });
      const renamed = (await teams()).find((t) => t.teamId === team.teamId);
      expect(renamed).toMatchObject({ name: 'platform-eng' });
      expect(renamed).not.toHaveProperty('spendLimit');
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'gateway-teams-admin');

      // Once no live key names it, the team is deleted.
      await ledger.http().delete(`/v1/organizations/${DEMO_ORG}/gateway-keys/${keyId}`).set(bearer(DEMO_ADMIN)).expect(200);
      await page.reload();
      await page.getByRole('button', { name: 'Delete team platform-eng' }).click();
      await page.getByRole('group', { name: 'Delete the team “platform-eng”?' }).getByRole('button', { name: 'Delete “platform-eng”' }).click();
      await page.getByRole('region', { name: 'Teams', exact: true }).getByText(/^No teams/).waitFor();
    });
    expect((await teams()).find((t) => t.name === 'platform-eng')).toBeUndefined();
  });

  it.each([
    ['the auditor', DEMO_AUDITOR, 'Ledger, newest first'],
    ['a member', DEMO_MEMBER, 'Invocations, newest first'],
  ])('does not show the gateway keys to %s, whose role may not read them, and does not ask for them', async (_who, token, loadedRegion) => {
    await browser.withPage(async (page) => {
      const asked: string[] = [];
      page.on('request', (request) => {
        if (request.url().includes('/gateway-keys')) asked.push(request.url());
      });
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, token);
      // The role is known from sign-in on, before any section renders: once another section shows its rows, this one would have too.
      await page.getByRole('region', { name: loadedRegion, exact: true }).locator('tbody tr').first().waitFor();
      await expect(page.getByRole('region', { name: 'Gateway keys', exact: true }).count()).resolves.toBe(0);
      expect(asked).toEqual([]);
    });
  });
});
