import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalMessagesApi } from '../src/local-messages-api';
import { SupportDesk } from '../src/support-desk';

describe('support-desk embeds llm-ledger from its packed tarball', () => {
  let directory: string;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'support-desk-'));
  });

  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('triages offline with its own tools and judge, explains it through the QueryBus and hears it settle', async () => {
    // A file-backed log: the projections run on their worker thread, from the installed package.
    const desk = await SupportDesk.start({ store: `sqlite:${join(directory, 'ledger.sqlite')}`, env: {} });
    try {
      await desk.setUp('scripted', 10_000);
      const { result, explanation, settledCharge } = await desk.triage('The printer on floor 3 is on fire');
      expect(result).toMatchObject({ state: 'settled', outcome: 'completed', turnsUsed: 2, toolCallsUsed: 2, answer: { queue: 'hardware', priority: 'high' } });
      expect(explanation).toMatchObject({ state: 'settled', outcome: 'completed' });
      expect(explanation?.sentence).toContain('Completed');
      expect(settledCharge).toBe(result.charge);
    } finally {
      await desk.close();
    }
  });

  it('completes an invocation routed to anthropic, against a local Messages API, and hands back its answer', async () => {
    const api = await LocalMessagesApi.start();
    const desk = await SupportDesk.start({
      store: 'sqlite::memory:',
      readStore: ':memory:',
      answerStore: ':memory:',
      anthropic: { apiKey: 'local-key', baseURL: api.baseURL },
      env: {},
    });
    try {
      await desk.setUp('anthropic', 10_000);
      const { result } = await desk.triage('I was charged twice');
      expect(result).toMatchObject({ state: 'settled', outcome: 'completed', answer: { queue: 'billing', priority: 'normal' } });
      expect(api.paths).toEqual(['/v1/messages']);
    } finally {
      await desk.close();
      await api.close();
    }
  });

  it('can import only the package root: deep paths are not exported', () => {
    // Node's own resolver, as the application meets it at run time (jest resolves modules its own way).
    const deep = spawnSync(process.execPath, ['-e', "require('llm-ledger/dist/src/composition/ledger.module')"], { encoding: 'utf8' });
    expect(deep.status).not.toBe(0);
    expect(deep.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
    const root = spawnSync(process.execPath, ['-e', "require('reflect-metadata'); console.log(typeof require('llm-ledger').LedgerModule)"], { encoding: 'utf8' });
    expect(root.stdout.trim()).toBe('function');
  });
});
