/**
 * The console shows money beside credits when the service has LEDGER_CREDIT_VALUE set (issue 33;
 * docs/http.md "Money beside credits"): the balance figures and the usage total, from the answers'
 * `money` members, exactly as the API wrote them. Without the variable the console shows credits only
 * (test/console/console.e2e.spec.ts reads the same figures without money).
 */
import type { AddressInfo } from 'node:net';
import { serveConsole } from '../../src/console/serve-console';
import { startHttpLedger, type HttpLedger } from '../http/support/http-ledger';
import { launchBrowser, type TestBrowser } from './support/browser';
import { buildConsole } from './support/console-build';

describe('the console with LEDGER_CREDIT_VALUE="0.0001 USD": money beside credits (issue 33)', () => {
  let ledger: HttpLedger;
  let browser: TestBrowser;
  let base: string;

  beforeAll(async () => {
    const consoleDirectory = buildConsole();
    ledger = await startHttpLedger({ env: { LEDGER_DEMO: '1', LEDGER_CREDIT_VALUE: '0.0001 USD' }, configure: (app) => serveConsole(app, consoleDirectory) });
    await ledger.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(ledger.app.getHttpServer().address() as AddressInfo).port}`;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await ledger?.close();
  });

  it('shows the demo organization’s balance and usage total in credits and in USD', async () => {
    await browser.withPage(async (page) => {
      await page.goto(`${base}/console/organizations/demo-org`);
      await page.getByLabel('Bearer token').waitFor();
      await page.keyboard.type('demo-auditor-token');
      await page.keyboard.press('Enter');
      const list = page.getByRole('region', { name: 'Balance' }).getByLabel('Balance figures');
      await list.waitFor();
      const names = await list.locator('dt').allTextContents();
      const values = await list.locator('dd').allTextContents();
      expect(Object.fromEntries(names.map((name, index) => [name, values[index]]))).toMatchObject({ Granted: '1,000,000 (100 USD)', Charged: '0 (0 USD)', Running: '0' });
      const total = page.getByRole('region', { name: 'Credits over time' }).locator('.attempts-total');
      await total.waitFor();
      await expect(total.textContent()).resolves.toContain('0 credits (0 USD) charged');
    });
  });
});
