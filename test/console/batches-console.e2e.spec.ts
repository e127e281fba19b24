/**
 * The console shows an organization's Message Batches (docs/gateway.md "Message Batches") in headless
 * Chromium: the organization page lists them with their status, requests, results, hold, charge and
 * model, and a batch's page shows its figures, its explanation and each request's result as charged,
 * all as the API says. Batches are made through the gateway's own routes with Anthropic's SDK,
 * against the local batches API of test/support/batches-api-server.ts. Also: the invocations table
 * fits a 1280 px window.
 */
import Anthropic from '@anthropic-ai/sdk';
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { serveConsole } from '../../src/console/serve-console';
import { GATEWAY_ACCOUNTING, type GatewayAccounting, type GatewayAdmission } from '../../src/gateway/gateway-call.port';
import { systemClock } from '../../src/runtime';
import { NO_USAGE } from '../../src/runtime/usage';
import { bearer, startHttpLedger, type HttpLedger } from '../http/support/http-ledger';
import { BatchesApiServer, batchRequest, errored, succeeded, type UpstreamBatchRequest } from '../support/batches-api-server';
import { NO_TOOLS } from '../gateway/support/body-facts';
import { accessibilityViolations, DESKTOP, launchBrowser, type TestBrowser } from './support/browser';
import { buildConsole } from './support/console-build';
import { figures, signIn } from './support/page-reading';

jest.setTimeout(120_000);

const DEMO_ORG = 'demo-org';
const DEMO_SYSTEM = 'demo-system-token';
const DEMO_ADMIN = 'demo-admin-token';
const DEMO_MEMBER = 'demo-member-token';
const MODEL = 'claude-sonnet-5-5';
/** 3 credits per input token, 15 per output token; batches at half price. */
const PRICES = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 6_000_000, cacheReadPerMTok: 300_000, batchBasisPoints: 5_000 };

interface ExplainedBatch {
  readonly batchId: string;
  readonly holdCredits: number;
  readonly chargeCredits?: number;
  readonly sentence: string;
}

const request = (customId: string) => batchRequest(customId, MODEL);

describe('issue 34: the console shows an organization’s Message Batches, in headless Chromium', () => {
  let ledger: HttpLedger;
  let upstream: BatchesApiServer;
  let consoleDirectory: string;
  let browser: TestBrowser;
  let base: string;
  const batchIds: string[] = [];

  const explained = async (batchId: string) => (await ledger.http().get(`/v1/organizations/${DEMO_ORG}/gateway-batches/${batchId}`).set(bearer(DEMO_ADMIN)).expect(200)).body as ExplainedBatch;

  beforeAll(async () => {
    consoleDirectory = buildConsole();
    upstream = await BatchesApiServer.start();
    ledger = await startHttpLedger({
      env: { LEDGER_DEMO: '1', ANTHROPIC_BASE_URL: upstream.baseURL, ANTHROPIC_API_KEY: 'sk-ant-the-service-own' },
      configure: (app) => serveConsole(app, consoleDirectory),
    });
    await ledger.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(ledger.app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchBrowser();

    await ledger.http().put(`/v1/gateway/models/${MODEL}`).set(bearer(DEMO_SYSTEM)).send({ prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true }).expect(200);
    const { key } = (await ledger.http().post(`/v1/organizations/${DEMO_ORG}/gateway-keys`).set(bearer(DEMO_ADMIN)).send({ name: 'batch-bot' }).expect(200)).body as { key: string };
    const client = new Anthropic({ baseURL: `${base}/anthropic`, apiKey: key, maxRetries: 0 });
    // The first settled: two succeeded at 100 in, 20 out (300 credits each at half price), one errored; the second still running.
    batchIds.push((await client.messages.batches.create({ requests: [request('ok-1'), request('ok-2'), request('bad-1')] })).id);
    upstream.end(upstream.onlyBatch().id, (r: UpstreamBatchRequest) => (r.custom_id.startsWith('ok') ? succeeded(r, { input_tokens: 100, output_tokens: 20 }) : errored(r)));
    for await (const _line of await client.messages.batches.results(batchIds[0]!));
    batchIds.push((await client.messages.batches.create({ requests: [request('later-1')] })).id);

    // A gateway call, so the invocations table has a row of each kind.
    const accounting = ledger.app.get<GatewayAccounting>(GATEWAY_ACCOUNTING);
    const admitted = (await accounting.admit({
      presentedKey: key,
      facts: { bodyBytes: 1_000, model: MODEL, maxTokens: 1_000, stream: true, imageBlocks: 0, documentBlocks: 0, ...NO_TOOLS },
      requestId: 'r',
    })) as Extract<GatewayAdmission, { admitted: true }>;
    await accounting.settle(admitted, {
      startedAtMs: systemClock.now(),
      durationMs: 840,
      classification: 'ok',
      httpStatus: 200,
      responseModel: MODEL,
      usage: { ...NO_USAGE, inputTokens: 1_234, outputTokens: 56 },
      timedOut: false,
      callerDisconnected: false,
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await ledger?.close();
    await upstream?.close();
    if (consoleDirectory !== undefined) rmSync(consoleDirectory, { recursive: true, force: true });
  });

  it('lists the organization’s batches newest first with their status, requests, results, hold, charge and model, as the API says, inside a 1280 px window', async () => {
    const [settled, running] = [await explained(batchIds[0]!), await explained(batchIds[1]!)];
    expect(settled.chargeCredits).toBe(600);
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_MEMBER);
      const table = page.getByRole('region', { name: 'Message Batches table' });
      const rows = table.locator('tbody tr');
      await rows.first().waitFor();
      expect(await rows.locator('th').allTextContents()).toEqual([batchIds[1], batchIds[0]]);
      const row = rows.filter({ hasText: batchIds[0]! });
      await expect(row.locator('td').allTextContents()).resolves.toEqual(['batch-bot', MODEL, 'settled', '3', '2 succeeded, 1 errored', `${settled.holdCredits.toLocaleString('en-US')} credits`, '600 credits', expect.stringMatching(/ UTC$/)]);
      await expect(rows.filter({ hasText: batchIds[1]! }).locator('td.status').textContent()).resolves.toBe('submitted');
      await expect(rows.filter({ hasText: batchIds[1]! }).locator('td.charged').textContent()).resolves.toBe('—');
      await expect(rows.filter({ hasText: batchIds[1]! }).locator('td.held').textContent()).resolves.toBe(`${running.holdCredits.toLocaleString('en-US')} credits`);
      await expect(table.evaluate((region) => region.scrollWidth - region.clientWidth)).resolves.toBe(0);
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'gateway-batches-list');
    }, DESKTOP);
  });

  it('shows a batch’s figures, its explanation and each request’s result and charge, reached from the list', async () => {
    const batch = await explained(batchIds[0]!);
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      await page.getByRole('link', { name: batchIds[0]! }).click();
      const summary = page.getByLabel('Message Batch', { exact: true });
      await summary.waitFor();
      await expect(figures(summary)).resolves.toMatchObject({
        'Gateway key': expect.stringMatching(/^batch-bot /),
        Models: `${MODEL} (rate card v1, 50 % at batch rates)`,
        Requests: '3',
        Results: '2 succeeded, 1 errored',
        'Hold (worst case)': `${batch.holdCredits.toLocaleString('en-US')} credits`,
        Charge: '600 credits',
      });
      await expect(page.getByRole('region', { name: 'Explanation' }).locator('.sentence').textContent()).resolves.toBe(batch.sentence);
      const requests = page.getByRole('region', { name: 'Batch requests table' }).locator('tbody tr');
      await requests.first().waitFor();
      const cells = async (customId: string) => requests.filter({ hasText: customId }).locator('td').allTextContents();
      await expect(cells('ok-1')).resolves.toEqual([MODEL, 'succeeded', '100 in, 20 out', expect.stringMatching(/ credits$/), '300 credits']);
      await expect(cells('bad-1')).resolves.toEqual([MODEL, 'errored', '—', expect.stringMatching(/ credits$/), '0 credits']);
      await expect(accessibilityViolations(page)).resolves.toEqual([]);
      await browser.screenshot(page, 'gateway-batch-page');
    }, DESKTOP);
  });

  it('fits the invocations table in a 1280 px window, with no sideways scrolling (it overflowed)', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/${DEMO_ORG}`);
      await signIn(page, DEMO_ADMIN);
      const table = page.getByRole('region', { name: 'Invocations table' });
      await table.locator('tbody tr').first().waitFor();
      await expect(table.evaluate((region) => region.scrollWidth - region.clientWidth)).resolves.toBe(0);
    }, DESKTOP);
  });
});
