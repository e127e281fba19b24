import { CommandBus } from '@nestjs/cqrs';
import { AdjustCreditsCommand, GrantCreditsCommand } from '../../src/accounts/account-commands';
import { PublishOperationCommand } from '../../src/catalog/publish-operation.command';
import type { InvocationSummary } from '../../src/invocations/invocation.state';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import type { InvocationPage } from '../../src/queries/list-invocations.query';
import type { LedgerEntryPage } from '../../src/queries/list-ledger-entries.query';
import { scriptedToolUse } from '../../src/runtime';
import { startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { publication } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

const answering = (operationId: string) =>
  scriptedFeature(operationId, () => [scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(1_234, 56) })]);

describe('docs/http.md an organization’s invocations and ledger entries, paged with opaque cursors', () => {
  let ledger: HttpLedger;
  let commands: CommandBus;
  const runs: InvocationSummary[] = [];
  const run = async (operationId: string, organizationId = 'acme'): Promise<InvocationSummary> =>
    commands.execute(new RunOperationCommand({ operationId, organizationId, input: { question: 'q' } }));

  beforeAll(async () => {
    ledger = await startHttpLedger({ features: [answering('list.alpha'), answering('list.beta'), answering('list.off')] });
    commands = ledger.app.get(CommandBus);
    await commands.execute(new PublishOperationCommand('list.alpha', publication({ creditHold: 100 })));
    await commands.execute(new PublishOperationCommand('list.beta', publication({ creditHold: 100 })));
    await commands.execute(new PublishOperationCommand('list.off', publication({ enabled: false })));
    await commands.execute(new GrantCreditsCommand('acme', 10_000_000, 'prepaid', 'grant-acme'));
    await commands.execute(new GrantCreditsCommand('globex', 10_000, 'prepaid', 'grant-globex'));
    await commands.execute(new AdjustCreditsCommand('acme', -500, 'goodwill reversal', 'adjust-acme'));
    for (let i = 0; i < 40; i += 1) runs.push(await run(i % 3 === 0 ? 'list.beta' : i % 10 === 9 ? 'list.off' : 'list.alpha'));
    await run('list.alpha', 'globex');
  }, 60_000);

  afterAll(() => ledger.close());

  const get = (path: string, token: string = TOKENS.acmeMember) => ledger.http().get(path).set('Authorization', `Bearer ${token}`);

  async function allPages(query: string, limit: number, between?: () => Promise<void>): Promise<InvocationPage['invocations'][number][]> {
    const seen: InvocationPage['invocations'][number][] = [];
    let cursor: string | null = null;
    do {
      const response = await get(`/v1/organizations/acme/invocations?limit=${limit}${query}${cursor === null ? '' : `&cursor=${cursor}`}`);
      expect(response.status).toBe(200);
      const page = response.body as InvocationPage;
      expect(page.invocations.length).toBeLessThanOrEqual(limit);
      seen.push(...page.invocations);
      cursor = page.nextCursor;
      await between?.();
    } while (cursor !== null);
    return seen;
  }

  it('lists every invocation of the organization once, newest first, and none of another organization’s', async () => {
    const listed = await allPages('', 7);
    expect(listed.map((entry) => entry.invocationId)).toEqual([...runs].reverse().map((summary) => summary.invocationId));
    const times = listed.map((entry) => Date.parse(entry.estimatedAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(listed[0]).toMatchObject({ organizationId: 'acme', state: 'settled', charge: runs.at(-1)!.charge, publicationVersion: 1 });
  });

  it('neither repeats nor skips an entry while new invocations are written between pages', async () => {
    const before = new Set(runs.map((summary) => summary.invocationId));
    const added: string[] = [];
    const listed = await allPages('', 6, async () => {
      added.push((await run('list.alpha')).invocationId);
      added.push((await run('list.off')).invocationId);
    });
    const ids = listed.map((entry) => entry.invocationId);
    expect(new Set(ids).size).toBe(ids.length);
    // Every invocation that existed when the listing began, exactly once; the newer ones are before its start.
    expect(ids.filter((id) => before.has(id)).sort()).toEqual([...before].sort());
    expect(ids.filter((id) => added.includes(id))).toEqual([]);
  });

  it('filters by operation, by state and by both, each filter paging on its own', async () => {
    const beta = await allPages('&operationId=list.beta', 4);
    expect(beta.length).toBeGreaterThan(0);
    expect(beta.every((entry) => entry.operationId === 'list.beta')).toBe(true);
    const refused = await allPages('&state=refused', 3);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((entry) => entry.state === 'refused' && entry.refusalReason === 'operation_disabled')).toBe(true);
    expect(await allPages('&operationId=list.alpha&state=refused', 5)).toEqual([]);
    const all = await allPages('', 500);
    expect(refused.map((entry) => entry.invocationId)).toEqual(all.filter((entry) => entry.state === 'refused').map((entry) => entry.invocationId));
  });

  it('filters by estimate time: from included, to excluded', async () => {
    const all = await allPages('', 500);
    const middle = all[10]!;
    const from = encodeURIComponent(middle.estimatedAt);
    const fromOn = await allPages(`&from=${from}`, 4);
    expect(fromOn.map((entry) => entry.invocationId)).toEqual(all.filter((entry) => entry.estimatedAt >= middle.estimatedAt).map((entry) => entry.invocationId));
    const before = await allPages(`&to=${from}`, 4);
    expect(before.map((entry) => entry.invocationId)).toEqual(all.filter((entry) => entry.estimatedAt < middle.estimatedAt).map((entry) => entry.invocationId));
  });

  it.each([
    ['a limit over 500', 'limit=501', 'limit'],
    ['a limit of 0', 'limit=0', 'limit'],
    ['a state that does not exist', 'state=running', 'state'],
    ['a from that is not an instant', 'from=yesterday', 'from'],
    ['a cursor it never gave', 'cursor=bm90LWEtY3Vyc29y', 'cursor'],
    ['an operation id with a space', 'operationId=a%20b', 'operationId'],
  ])('refuses %s with a 400 naming the field', async (_what, query, field) => {
    const response = await get(`/v1/organizations/acme/invocations?${query}`);
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.fields)).toContain(field);
  });

  it('names a bad limit and a malformed cursor together, over HTTP as the query does', async () => {
    const response = await get('/v1/organizations/acme/invocations?limit=0&cursor=not%20base64');
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.fields).sort()).toEqual(['cursor', 'limit']);
  });

  it('answers another organization’s member as if the organization did not exist', async () => {
    expect((await get('/v1/organizations/acme/invocations', TOKENS.globexMember)).status).toBe(404);
    expect((await get('/v1/organizations/acme/invocations', TOKENS.auditor)).status).toBe(200);
  });

  it('lists every ledger entry in the account’s order, each naming its invocation or idempotency key, with cursors', async () => {
    const entries: LedgerEntryPage['entries'][number][] = [];
    let cursor: string | null = null;
    do {
      const response = await get(`/v1/organizations/acme/ledger?limit=9${cursor === null ? '' : `&cursor=${cursor}`}`, TOKENS.acmeAdmin);
      expect(response.status).toBe(200);
      entries.push(...(response.body as LedgerEntryPage).entries);
      cursor = (response.body as LedgerEntryPage).nextCursor;
    } while (cursor !== null);
    expect(entries.slice(0, 2)).toEqual([
      expect.objectContaining({ kind: 'grant', credits: 10_000_000, idempotencyKey: 'grant-acme', reason: 'prepaid', availableAfter: 10_000_000 }),
      expect.objectContaining({ kind: 'adjustment', credits: -500, idempotencyKey: 'adjust-acme', availableAfter: 9_999_500 }),
    ]);
    const settled = runs.filter((summary) => summary.state === 'settled');
    // A settled invocation is a hold, then a charge and a release of that hold.
    for (const summary of settled) {
      expect(entries.filter((entry) => entry.invocationId === summary.invocationId).map((entry) => [entry.kind, entry.credits])).toEqual([
        ['hold', 100],
        ['charge', summary.charge],
        ['release', 100],
      ]);
    }
    const balance = await get('/v1/organizations/acme/balance', TOKENS.acmeAdmin);
    expect(entries.at(-1)!.availableAfter).toBe(balance.body.available);
    expect(new Set(entries.map((entry) => entry.sequence)).size).toBe(entries.length);
  });

  it('lists the same entries newest first with order=newest, paged by cursors that continue that order (issue 26, finding 6)', async () => {
    const read = async (order: string): Promise<LedgerEntryPage['entries'][number][]> => {
      const entries: LedgerEntryPage['entries'][number][] = [];
      let cursor: string | null = null;
      do {
        const response = await get(`/v1/organizations/acme/ledger?limit=4&order=${order}${cursor === null ? '' : `&cursor=${cursor}`}`, TOKENS.acmeAdmin);
        expect(response.status).toBe(200);
        entries.push(...(response.body as LedgerEntryPage).entries);
        cursor = (response.body as LedgerEntryPage).nextCursor;
      } while (cursor !== null);
      return entries;
    };
    const oldest = await read('oldest');
    const newest = await read('newest');
    expect(oldest.length).toBeGreaterThan(8);
    expect(newest.map((entry) => entry.sequence)).toEqual([...oldest].reverse().map((entry) => entry.sequence));
    const balance = await get('/v1/organizations/acme/balance', TOKENS.acmeAdmin);
    expect(newest[0]!.availableAfter).toBe(balance.body.available);
    const bad = await get('/v1/organizations/acme/ledger?order=sideways', TOKENS.acmeAdmin);
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.fields)).toEqual(['order']);
  });

  it('keeps the ledger for the organization’s admin, the operator and auditors', async () => {
    expect((await get('/v1/organizations/acme/ledger', TOKENS.acmeMember)).status).toBe(403);
    expect((await get('/v1/organizations/acme/ledger', TOKENS.globexAdmin)).status).toBe(404);
    expect((await get('/v1/organizations/acme/ledger?cursor=!!', TOKENS.acmeAdmin)).status).toBe(400);
  });
});
