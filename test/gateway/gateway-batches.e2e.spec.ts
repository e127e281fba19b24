/**
 * Message Batches through the gateway (docs/gateway.md "Message Batches"), driven with Anthropic's SDK
 * (`client.messages.batches.*`) against the real service and a local batches API with faults: the
 * hold of every request's worst case at batch rates in one decision before anything goes upstream,
 * each result charged once at its usage however often and by however many instances the results are
 * fetched, errored/canceled/expired requests charged nothing, a batch nobody fetches settled by the
 * poller through upstream errors, and a crash between fetching results and recording them.
 */
import Anthropic from '@anthropic-ai/sdk';
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { auditLedger } from '../../src/cli/ledger-audit';
import { openReadModelStore } from '../../src/projection-runner';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { GATEWAY_BATCH_OPERATION_ID, gatewayBatchDecider, gatewayBatchStreamName, holdIdOfBatch } from '../../src/gateway/batches/gateway-batch';
import { GatewayBatchesPoller } from '../../src/gateway/batches/gateway-batches.poller';
import { GATEWAY_BATCH_LOST_RELEASE_AFTER_MS, GATEWAY_BATCH_LOST_SEARCH_AFTER_MS, GATEWAY_BATCH_UNSENT_AFTER_MS } from '../../src/gateway/batches/lost-batch-search';
import { GatewayBatches, LOST_BATCH_RETRY_AFTER_SECONDS } from '../../src/gateway/batches/gateway-batches.service';
import { BatchUpstreamError, type BatchUpstream } from '../../src/gateway/batches/batch-upstream';
import { GatewayAdmin } from '../../src/gateway/gateway-admin.service';
import { bucketOf, compareUsage, ledgerUsageByBucket } from '../../src/reconcile/provider-reconciliation';
import { NO_USAGE } from '../../src/runtime/usage';
import { bearer, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { BatchesApiServer, errored, expired, succeeded, type UpstreamBatchRequest } from '../support/batches-api-server';

jest.setTimeout(120_000);

const MODEL = 'claude-sonnet-5-5';
/** 3 credits per input token, 15 per output token; batches at half price. */
const PRICES = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 6_000_000, cacheReadPerMTok: 300_000, batchBasisPoints: 5_000 };
const GRANTED = 100_000_000;
/** A succeeded request's usage: 100 in, 20 out = 300 + 300 = 600 credits at full price, 300 at half. */
const USAGE = { input_tokens: 100, output_tokens: 20 };
const CHARGE_PER_SUCCESS = 300;

interface Instance {
  readonly ledger: HttpLedger;
  readonly baseURL: string;
  client(key: string): Anthropic;
}

async function startInstance(directory: string, name: string, upstream: BatchesApiServer): Promise<Instance> {
  const ledger = await startHttpLedger({
    directory,
    keepDirectory: true,
    env: { ANTHROPIC_BASE_URL: upstream.baseURL, ANTHROPIC_API_KEY: 'sk-ant-the-service-own', LEDGER_READ_STORE: join(directory, `read-${name}.sqlite`), LEDGER_ANSWER_STORE: join(directory, `answers-${name}.sqlite`) },
  });
  const server = ledger.app.getHttpServer() as Server;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/anthropic`;
  return { ledger, baseURL, client: (key) => new Anthropic({ baseURL, apiKey: key, maxRetries: 0 }) };
}

const request = (customId: string, maxTokens = 100): Anthropic.Messages.BatchCreateParams.Request => ({
  custom_id: customId,
  params: { model: MODEL, max_tokens: maxTokens, messages: [{ role: 'user', content: 'Hello' }] },
});

describe('docs/gateway.md "Message Batches" and "Admission, and why a key can never overspend": every request held at its worst case before upstream, each result charged once at its reported usage (the batch counterpart of STATE-PFM-LLM-001 transitions 3 and 8), with the SDK against a local batches API', () => {
  let directory: string;
  let upstream: BatchesApiServer;
  let a: Instance;
  let b: Instance;
  let key: string;
  let otherKey: string;

  const system = () => bearer(TOKENS.system);
  const balance = async (org = 'acme') => (await a.ledger.http().get(`/v1/organizations/${org}/balance`).set(system()).expect(200)).body as { available: number; held: number; charged: number };
  const repositoryOf = (batches: GatewayBatches) => (batches as unknown as { repository: AggregateRepository }).repository;
  const batchState = async (batchId: string) => (await new AggregateRepository(a.ledger.app.get<EventStore>(EVENT_STORE)).load(gatewayBatchStreamName(batchId), gatewayBatchDecider)).state;
  const resultsOf = async (client: Anthropic, batchId: string) => {
    const lines: Anthropic.Messages.MessageBatchIndividualResponse[] = [];
    for await (const line of await client.messages.batches.results(batchId)) lines.push(line);
    return lines;
  };

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-batches-'));
    upstream = await BatchesApiServer.start();
    a = await startInstance(directory, 'a', upstream);
    b = await startInstance(directory, 'b', upstream);
    const http = a.ledger.http();
    for (const org of ['acme', 'other']) await http.post(`/v1/organizations/${org}/grants`).set(system()).send({ credits: GRANTED, reason: 'start', idempotencyKey: `g-${org}` }).expect(200);
    await http.put(`/v1/gateway/models/${MODEL}`).set(system()).send({ prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true }).expect(200);
    key = (await http.post('/v1/organizations/acme/gateway-keys').set(system()).send({ name: 'batch-bot' }).expect(200)).body.key;
    otherKey = (await http.post('/v1/organizations/other/gateway-keys').set(system()).send({ name: 'other-bot' }).expect(200)).body.key;
  });
  afterAll(async () => {
    await a?.ledger.close();
    await b?.ledger.close();
    await upstream?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('holds every request’s worst case at batch rates in one decision before sending, charges each result once at its usage however often and from however many instances the results are fetched, and states and audits it', async () => {
    const before = await balance();
    const batch = await a.client(key).messages.batches.create({ requests: [request('ok-1'), request('ok-2'), request('bad-1'), request('late-1')] });
    expect(batch.id).toMatch(/^msgbatch_[0-9a-f]{32}$/);
    expect(batch.processing_status).toBe('in_progress');
    expect(batch.results_url).toBeNull();
    const state = await batchState(batch.id);
    // Each request's worst case at half price: (bytes + 4,096 framing) × 6 (the dearest input rate) + 100 × 15, halved, rounded once.
    const holds = [...state.requests.values()].map((r) => r.holdCredits);
    expect(new Set(holds).size).toBe(1);
    expect(holds[0]).toBeLessThan(((4_096 + 200) * 6 + 1_500) / 2 + 1);
    expect((await balance()).held - before.held).toBe(holds.reduce((x, y) => x + y, 0));
    // The upstream saw the service's key, never the caller's.
    expect(upstream.requests.map((r) => r.apiKey)).toEqual(upstream.requests.map(() => 'sk-ant-the-service-own'));

    const upstreamBatch = upstream.onlyBatch();
    upstream.end(upstreamBatch.id, (r: UpstreamBatchRequest) => (r.custom_id.startsWith('ok') ? succeeded(r, USAGE) : r.custom_id.startsWith('bad') ? errored(r) : expired(r)));
    const ended = await b.client(key).messages.batches.retrieve(batch.id);
    expect(ended.processing_status).toBe('ended');
    // The gateway's own results route: the SDK fetches it with the caller's key.
    expect(ended.results_url).toBe(`${b.baseURL}/v1/messages/batches/${batch.id}/results`);

    const [fromA, fromB] = await Promise.all([resultsOf(a.client(key), batch.id), resultsOf(b.client(key), batch.id)]);
    const again = await resultsOf(a.client(key), batch.id);
    for (const lines of [fromA, fromB, again]) expect(lines.map((l) => [l.custom_id, l.result.type])).toEqual([['ok-1', 'succeeded'], ['ok-2', 'succeeded'], ['bad-1', 'errored'], ['late-1', 'expired']]);
    const after = await balance();
    expect(after.charged - before.charged).toBe(2 * CHARGE_PER_SUCCESS);
    expect(after.held).toBe(before.held);
    const settled = await batchState(batch.id);
    expect(settled.settled).toMatchObject({ chargeCredits: 600, counts: { succeeded: 2, errored: 1, canceled: 0, expired: 1 } });
    // Two instances, three fetches: one result event per request, one settlement.
    const events = await a.ledger.app.get<EventStore>(EVENT_STORE).readStream(gatewayBatchStreamName(batch.id));
    expect(events.filter((e) => e.type === 'GatewayBatchResultsRecorded').flatMap((e) => (e.data as { results: unknown[] }).results)).toHaveLength(4);
    expect(events.filter((e) => e.type === 'GatewayBatchSettled')).toHaveLength(1);

    // In the usage statement, on its key's and model's line: each request settled with its outcome, charge and tokens.
    const day = new Date().toISOString().slice(0, 10);
    const row = async () => {
      const statement = (await a.ledger.http().get(`/v1/organizations/acme/usage?from=${day}&to=${day}&groupBy=operation,key,model`).set(system()).expect(200)).body as { rows: { operationId: string; keyName: string; model: string; credits: number; settled: number; outcomes: Record<string, number>; tokens: Record<string, number> }[] };
      return statement.rows.find((r) => r.operationId === GATEWAY_BATCH_OPERATION_ID);
    };
    // The read side follows the log after commit: ask again until the first batch's settlement shows (a poll for a condition).
    for (let tries = 0; (await row()) === undefined && tries < 500; tries++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await row()).toMatchObject({ keyName: 'batch-bot', model: MODEL, credits: 600, settled: 4, outcomes: { completed: 2, failed: 1, time_limit: 1 }, tokens: { inputTokens: 200, outputTokens: 40 } });

    // Explained, the batch and each request, to its organization; another organization's members get 404.
    const explained = (await a.ledger.http().get(`/v1/organizations/acme/gateway-batches/${batch.id}`).set(system()).expect(200)).body;
    expect(explained).toMatchObject({ status: 'settled', keyName: 'batch-bot', requestCount: 4, chargeCredits: 600, results: { succeeded: 2, errored: 1, canceled: 0, expired: 1 } });
    expect(explained.sentence).toBe(`Batch of 4 requests by key "batch-bot", held ${explained.holdCredits} credits at batch rates; 2 succeeded, 1 errored, 0 canceled, 1 expired; charged 600 credits for the succeeded requests' usage at batch rates, the rest of the hold released.`);
    const ok = (await b.ledger.http().get(`/v1/organizations/acme/gateway-batches/${batch.id}/requests/ok-1`).set(system()).expect(200)).body;
    expect(ok).toMatchObject({ model: MODEL, rateCardVersion: 1, result: { type: 'succeeded', priceCredits: 300, usage: { inputTokens: 100, outputTokens: 20 } } });
    expect(ok.sentence).toMatch(/^Request "ok-1" of batch msgbatch_\w+ \(claude-sonnet-5-5, rate card version 1\) held \d+ credits at batch rates; it succeeded and was charged 300 credits for its usage at batch rates/);
    const late = (await a.ledger.http().get(`/v1/organizations/acme/gateway-batches/${batch.id}/requests/late-1`).set(system()).expect(200)).body;
    expect(late.sentence).toMatch(/it expired before it ran: charged nothing, its hold released\.$/);
    await a.ledger.http().get(`/v1/organizations/other/gateway-batches/${batch.id}`).set(system()).expect(404);

    // audit verify: the batch's hold, its settlement and each result's batch price agree with the account and the statement.
    const readStore = openReadModelStore({ path: join(directory, 'read-a.sqlite') });
    try {
      const audited = await auditLedger({ eventStore: a.ledger.app.get<EventStore>(EVENT_STORE), readStore });
      expect(audited.differences).toEqual([]);
    } finally {
      readStore.close();
    }
  });

  it('keeps each batch to the organization that created it: another organization’s key gets 404 on retrieve, results, cancel and delete, and lists only its own', async () => {
    const batch = await a.client(key).messages.batches.create({ requests: [request('mine-1')] });
    const other = a.client(otherKey);
    for (const call of [() => other.messages.batches.retrieve(batch.id), () => other.messages.batches.cancel(batch.id), () => other.messages.batches.delete(batch.id), () => resultsOf(other, batch.id)]) {
      await expect(call()).rejects.toMatchObject({ status: 404, error: { type: 'error', error: { type: 'not_found_error' } } });
    }
    const theirs: string[] = [];
    for await (const listed of other.messages.batches.list()) theirs.push(listed.id);
    expect(theirs).toEqual([]);
    const mine: string[] = [];
    for await (const listed of a.client(key).messages.batches.list({ limit: 1 })) mine.push(listed.id);
    expect(mine[0]).toBe(batch.id);
    expect(mine.length).toBeGreaterThanOrEqual(2);
    // Canceled before it ended: its requests end canceled, charged nothing, the hold released.
    const before = await balance();
    expect((await a.client(key).messages.batches.cancel(batch.id)).processing_status).toBe('canceling');
    upstream.end([...upstream.batches.values()].pop()!.id, (r) => succeeded(r, USAGE));
    expect((await resultsOf(a.client(key), batch.id)).map((l) => l.result.type)).toEqual(['canceled']);
    const after = await balance();
    expect(after.charged).toBe(before.charged);
    expect(before.held - after.held).toBeGreaterThan(0);
    expect(await a.client(key).messages.batches.delete(batch.id)).toEqual({ id: batch.id, type: 'message_batch_deleted' });
    await expect(a.client(key).messages.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 });
  });

  it('refuses a batch that does not fit the key’s limit with 402 in Anthropic’s shape before anything goes upstream, and a bad request with 400 naming requests[i].params', async () => {
    const limited = (await a.ledger.http().post('/v1/organizations/acme/gateway-keys').set(system()).send({ name: 'tight', spendLimit: { credits: 20_000, period: 'day' } }).expect(200)).body.key as string;
    const sent = upstream.count('create');
    const many = Array.from({ length: 20 }, (_, i) => request(`r-${i}`));
    await expect(a.client(limited).messages.batches.create({ requests: many })).rejects.toMatchObject({ status: 402, error: { type: 'error', error: { type: 'billing_error' } } });
    await expect(a.client(key).messages.batches.create({ requests: [request('a'), request('b', 100_000)] })).rejects.toMatchObject({
      status: 400,
      error: { error: { type: 'invalid_request_error', message: expect.stringMatching(/^requests\[1\]\.params\.max_tokens: 100000 is over 64000/) } },
    });
    await expect(a.client(key).messages.batches.create({ requests: [request('a'), request('a')] })).rejects.toMatchObject({ status: 400, error: { error: { message: expect.stringMatching(/^requests\[1\]\.custom_id/) } } });
    await expect(
      a.client(key).messages.batches.create({ requests: [{ custom_id: 'x', params: { model: 'claude-x', max_tokens: 1, messages: [] } }] }),
    ).rejects.toMatchObject({ status: 400, error: { error: { message: expect.stringMatching(/^requests\[0\]\.params\.model: claude-x is not on/) } } });
    expect(upstream.count('create')).toBe(sent);
  });

  it('decides the key again in the hold’s one decision: a cap lowered after the requests were checked refuses the batch before anything goes upstream', async () => {
    const admin = a.ledger.app.get(GatewayAdmin);
    const { key: capped, keyId } = await admin.issueKey('acme', { name: 'capped-bot' });
    const batches = a.ledger.app.get(GatewayBatches);
    const repository = (batches as unknown as { repository: AggregateRepository }).repository;
    const handle = repository.handle.bind(repository);
    const race = jest.spyOn(repository, 'handle').mockImplementation(async (stream, decider, command, context) => {
      // Another instance lowers the key's cap between the requests' check and the hold.
      if ((command as { type: string }).type === 'PlaceHold') await admin.changeKey('acme', keyId, { name: 'capped-bot', maxOutputTokens: 50 });
      return handle(stream, decider, command, context);
    });
    const sent = upstream.count('create');
    try {
      await expect(a.client(capped).messages.batches.create({ requests: [request('cap-1', 100)] })).rejects.toMatchObject({ status: 400, error: { error: { type: 'invalid_request_error', message: expect.stringMatching(/max_tokens: 100 is over 50/) } } });
    } finally {
      race.mockRestore();
    }
    expect(upstream.count('create')).toBe(sent);
  });

  it('multi-model batch: decides every model of the batch against the key in the hold’s one decision, not only the first request’s', async () => {
    const second = 'claude-haiku-5-5';
    await a.ledger.http().put(`/v1/gateway/models/${second}`).set(system()).send({ prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true }).expect(200);
    const admin = a.ledger.app.get(GatewayAdmin);
    const { key: both, keyId } = await admin.issueKey('acme', { name: 'two-models', models: [MODEL, second] });
    const repository = (a.ledger.app.get(GatewayBatches) as unknown as { repository: AggregateRepository }).repository;
    const handle = repository.handle.bind(repository);
    const race = jest.spyOn(repository, 'handle').mockImplementation(async (stream, decider, command, context) => {
      // Another instance takes the second model from the key between the requests' check and the hold.
      if ((command as { type: string }).type === 'PlaceHold') await admin.changeKey('acme', keyId, { name: 'two-models', models: [MODEL] });
      return handle(stream, decider, command, context);
    });
    const sent = upstream.count('create');
    const held = (await balance()).held;
    const mixed = [request('m-1'), { custom_id: 'm-2', params: { model: second, max_tokens: 100, messages: [{ role: 'user' as const, content: 'Hello' }] } }];
    try {
      await expect(a.client(both).messages.batches.create({ requests: mixed })).rejects.toMatchObject({ status: 403, error: { error: { type: 'permission_error', message: `key "two-models" may not call ${second}` } } });
    } finally {
      race.mockRestore();
    }
    expect(upstream.count('create')).toBe(sent);
    expect((await balance()).held).toBe(held);
  });

  it('rate limits: a batch counts its request count against requestsPerMinute and its worst-case tokens against tokensPerMinute in its minute, refused 429 (or 400 when no minute could admit it) naming the field, in Anthropic’s shape', async () => {
    const admin = a.ledger.app.get(GatewayAdmin);
    const { key: limited } = await admin.issueKey('acme', { name: 'rpm-bot', requestsPerMinute: 3 });
    const { key: tokenLimited } = await admin.issueKey('acme', { name: 'tpm-bot', tokensPerMinute: 10_000 });
    const clock = (a.ledger.app.get(GatewayBatches) as unknown as { clock: { now(): number } }).clock;
    // Every decision of this test in one UTC minute, whatever the wall clock does meanwhile.
    const minute = jest.spyOn(clock, 'now').mockReturnValue(Math.floor(Date.now() / 60_000) * 60_000 + 60_000 + 1_000);
    const sent = upstream.count('create');
    try {
      await expect(a.client(limited).messages.batches.create({ requests: [request('l-1'), request('l-2'), request('l-3'), request('l-4')] })).rejects.toMatchObject({
        status: 400,
        error: { type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/^requests: 4 requests are over key "rpm-bot"'s requestsPerMinute \(3\)/) } },
      });
      const admitted = [await a.client(limited).messages.batches.create({ requests: [request('l-1'), request('l-2')] })];
      const refused = await a.client(limited).messages.batches.create({ requests: [request('l-3'), request('l-4')] }).catch((error: unknown) => error);
      expect(refused).toMatchObject({ status: 429, error: { type: 'error', error: { type: 'rate_limit_error', message: expect.stringMatching(/rate limit: key \S+ may have 3 calls admitted per minute and had 2 in \S+ UTC, and this batch's 2 requests would pass it$/) } } });
      expect(Number((refused as { headers: Headers }).headers.get('retry-after'))).toBeGreaterThan(0);
      // Each request's worst case is about 4,100 tokens: three are over 10,000.
      await expect(a.client(tokenLimited).messages.batches.create({ requests: [request('t-1'), request('t-2'), request('t-3')] })).rejects.toMatchObject({
        status: 400,
        error: { error: { type: 'invalid_request_error', message: expect.stringMatching(/^requests: the batch's worst case of \d+ tokens is over key "tpm-bot"'s tokensPerMinute \(10000\)/) } },
      });
      admitted.push(await a.client(tokenLimited).messages.batches.create({ requests: [request('t-1'), request('t-2')] }));
      await expect(a.client(tokenLimited).messages.batches.create({ requests: [request('t-3')] })).rejects.toMatchObject({ status: 429, error: { error: { type: 'rate_limit_error', message: expect.stringMatching(/tokens per minute/) } } });
      // Ended and settled, so no later test's poll meets them.
      for (const upstreamBatch of [...upstream.batches.values()].slice(-2)) upstream.end(upstreamBatch.id, expired);
      for (const batch of admitted) expect(await a.ledger.app.get(GatewayBatches).settle(batch.id)).toBe('settled');
    } finally {
      minute.mockRestore();
    }
    expect(upstream.count('create')).toBe(sent + 2);
  });

  it('settles a batch whose results nobody fetches, through upstream errors while polling, from either instance, once', async () => {
    const before = await balance();
    const batch = await a.client(key).messages.batches.create({ requests: [request('p-1'), request('p-2')] });
    const pollerA = a.ledger.app.get(GatewayBatchesPoller);
    const pollerB = b.ledger.app.get(GatewayBatchesPoller);
    expect((await pollerA.pollOnce()).settled).not.toContain(batch.id);
    upstream.end([...upstream.batches.values()].pop()!.id, (r) => succeeded(r, USAGE));
    upstream.failNext('retrieve', 2);
    const failed = await pollerA.pollOnce();
    expect(failed.failed).toContain(batch.id);
    // Backed off: not asked again before its time, then settled.
    const now = Date.now();
    expect((await pollerA.pollOnce(now)).failed).not.toContain(batch.id);
    expect((await pollerB.pollOnce(now)).failed).toContain(batch.id);
    const [settledA, settledB] = await Promise.all([pollerA.pollOnce(now + 60 * 60_000), pollerB.pollOnce(now + 60 * 60_000)]);
    expect([...settledA.settled, ...settledB.settled]).toContain(batch.id);
    const after = await balance();
    expect(after.charged - before.charged).toBe(2 * CHARGE_PER_SUCCESS);
    expect(after.held).toBe(before.held);
    const events = await a.ledger.app.get<EventStore>(EVENT_STORE).readStream(gatewayBatchStreamName(batch.id));
    expect(events.filter((e) => e.type === 'GatewayBatchSettled')).toHaveLength(1);
  });

  it('a lost create answer: upstream created the batch and its answer never came; the hold stays, the poller finds the batch in upstream’s list, and it is settled as any batch', async () => {
    const before = await balance();
    upstream.loseNextCreateAnswer(true);
    const lost = await a.client(key).messages.batches.create({ requests: [request('lost-1'), request('lost-2')] }).catch((error: unknown) => error);
    expect(lost).toMatchObject({ status: 502, error: { type: 'error', error: { type: 'api_error', message: expect.stringMatching(/answer to the batch's create was lost/) } } });
    const batchId = /msgbatch_[0-9a-f]{32}/.exec((lost as { error: { error: { message: string } } }).error.error.message)![0];
    const held = (await balance()).held - before.held;
    expect(held).toBe((await batchState(batchId)).created!.holdCredits);
    const explained = (await a.ledger.http().get(`/v1/organizations/acme/gateway-batches/${batchId}`).set(system()).expect(200)).body;
    expect(explained).toMatchObject({ status: 'answer_lost', answerLost: { reason: 'upstream answered nothing' } });
    // While it is looked for, the batch is neither found nor unknown: 503 with when to ask again, not 404.
    for (const asked of [a.client(key).messages.batches.retrieve(batchId), b.client(key).messages.batches.cancel(batchId)]) {
      const looking = (await asked.catch((error: unknown) => error)) as InstanceType<typeof Anthropic.APIError>;
      expect(looking).toMatchObject({ status: 503, error: { type: 'error', error: { type: 'api_error', message: expect.stringMatching(/answer to its create was lost; the gateway is looking for it/) } } });
      expect(looking.error).toMatchObject({ error: { message: expect.stringContaining(batchId) } });
      expect(looking.headers?.get('retry-after')).toBe(String(LOST_BATCH_RETRY_AFTER_SECONDS));
    }

    const poller = a.ledger.app.get(GatewayBatchesPoller);
    const createdAtMs = Date.parse((await batchState(batchId)).created!.createdAt);
    const listed = upstream.count('list');
    // Before every create that could share its window has been answered, nothing is asked upstream.
    await poller.pollOnce(createdAtMs + GATEWAY_BATCH_UNSENT_AFTER_MS + 1_000);
    expect(upstream.count('list')).toBe(listed);
    await poller.pollOnce(createdAtMs + GATEWAY_BATCH_LOST_SEARCH_AFTER_MS + 1_000);
    const found = await batchState(batchId);
    const upstreamBatch = [...upstream.batches.values()].pop()!;
    expect(found.upstreamBatchId).toBe(upstreamBatch.id);
    expect((await balance()).held - before.held).toBe(held);
    const mine: string[] = [];
    for await (const listedBatch of a.client(key).messages.batches.list()) mine.push(listedBatch.id);
    expect(mine).toContain(batchId);

    upstream.end(upstreamBatch.id, (r) => succeeded(r, USAGE));
    expect((await poller.pollOnce(createdAtMs + GATEWAY_BATCH_LOST_SEARCH_AFTER_MS + 120_000)).settled).toContain(batchId);
    const after = await balance();
    expect(after.charged - before.charged).toBe(2 * CHARGE_PER_SUCCESS);
    expect(after.held).toBe(before.held);
  });

  it('a lost create answer that upstream never acted on: the hold stays through the search and is released once upstream has listed no such batch past its expiry window', async () => {
    const before = await balance();
    const upstreamBatches = upstream.batches.size;
    upstream.loseNextCreateAnswer(false);
    const lost = await a.client(key).messages.batches.create({ requests: [request('gone-1')] }).catch((error: unknown) => error);
    expect(lost).toMatchObject({ status: 502 });
    const batchId = /msgbatch_[0-9a-f]{32}/.exec((lost as { error: { error: { message: string } } }).error.error.message)![0];
    expect(upstream.batches.size).toBe(upstreamBatches);
    const createdAtMs = Date.parse((await batchState(batchId)).created!.createdAt);
    const poller = a.ledger.app.get(GatewayBatchesPoller);
    await poller.pollOnce(createdAtMs + GATEWAY_BATCH_LOST_SEARCH_AFTER_MS + 1_000);
    expect((await balance()).held).toBeGreaterThan(before.held);
    expect((await batchState(batchId)).notSubmitted).toBeUndefined();
    expect((await poller.pollOnce(createdAtMs + GATEWAY_BATCH_LOST_RELEASE_AFTER_MS + 1_000)).settled).toContain(batchId);
    const after = await balance();
    expect(after.held).toBe(before.held);
    expect(after.charged).toBe(before.charged);
    expect((await batchState(batchId)).notSubmitted?.reason).toMatch(/upstream listed no batch of its 1 requests/);
  });

  it('reconcile: counts each succeeded batch result’s usage, as charged at batch rates, under its model in the bucket upstream ended the batch, so the ledger matches Anthropic’s usage report', async () => {
    const model = 'claude-opus-5-5';
    await a.ledger.http().put(`/v1/gateway/models/${model}`).set(system()).send({ prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true }).expect(200);
    const asked = (customId: string) => ({ custom_id: customId, params: { model, max_tokens: 100, messages: [{ role: 'user' as const, content: 'Hello' }] } });
    const batch = await a.client(key).messages.batches.create({ requests: [asked('r-1'), asked('r-2'), asked('r-3')] });
    const usage = { input_tokens: 700, output_tokens: 30, cache_read_input_tokens: 50 };
    const upstreamBatch = [...upstream.batches.values()].pop()!;
    upstream.end(upstreamBatch.id, (r, index) => (index === 2 ? errored(r) : succeeded(r, usage)));
    expect(await a.ledger.app.get(GatewayBatches).settle(batch.id)).toBe('settled');
    const store = a.ledger.app.get<EventStore>(EVENT_STORE);
    const recorded = (await store.readStream(gatewayBatchStreamName(batch.id))).filter((e) => e.type === 'GatewayBatchResultsRecorded');
    expect(recorded.map((e) => (e.data as { endedAt?: string }).endedAt)).toEqual([upstreamBatch.endedAt]);
    const bucket = bucketOf(Date.parse(upstreamBatch.endedAt!), '1d');
    const fromMs = Date.parse(bucket);
    const ledger = await ledgerUsageByBucket({ eventStore: store, provider: 'anthropic', fromMs, toMs: fromMs + 86_400_000, width: '1d' });
    const ours = ledger.rows.filter((row) => row.model === model);
    // Anthropic's report for the day the batch ended: the two succeeded requests, whatever the service tier.
    const report = [{ bucket, model, usage: { ...NO_USAGE, inputTokens: 1_400, outputTokens: 60, cacheReadTokens: 100 } }];
    expect(compareUsage(ours, report)).toEqual([]);
    expect(ledger.batchResults).toBeGreaterThanOrEqual(2);
  });

  it('a lost create answer from a stopped instance: a batch held with no answer recorded is not released when it counts unsent, but looked for upstream and found', async () => {
    const before = await balance();
    const batches = a.ledger.app.get(GatewayBatches);
    const upstreamBatches = (batches as unknown as { provider: { batches: BatchUpstream } }).provider.batches;
    let batchId = '';
    const stopped = jest.spyOn(upstreamBatches, 'create').mockImplementationOnce(async (requests) => {
      // Upstream creates it; the instance stops before recording the answer.
      await upstreamBatches.create.call(upstreamBatches, requests);
      throw new Error('instance stopped');
    });
    const index = jest.spyOn(repositoryOf(batches), 'handle');
    try {
      await expect(a.client(key).messages.batches.create({ requests: [request('st-1'), request('st-2'), request('st-3')] })).rejects.toMatchObject({ status: 500 });
      batchId = (index.mock.calls.find(([, , command]) => (command as { type: string }).type === 'CreateBatch')![2] as { data: { batchId: string } }).data.batchId;
    } finally {
      stopped.mockRestore();
      index.mockRestore();
    }
    const held = (await balance()).held - before.held;
    expect(held).toBeGreaterThan(0);
    const createdAtMs = Date.parse((await batchState(batchId)).created!.createdAt);
    const poller = a.ledger.app.get(GatewayBatchesPoller);
    await poller.pollOnce(createdAtMs + GATEWAY_BATCH_UNSENT_AFTER_MS + 1_000);
    expect((await batchState(batchId)).answerLost?.reason).toMatch(/instance creating it stopped/);
    expect((await balance()).held - before.held).toBe(held);
    await poller.pollOnce(createdAtMs + GATEWAY_BATCH_LOST_SEARCH_AFTER_MS + 1_000);
    const upstreamBatch = [...upstream.batches.values()].pop()!;
    expect((await batchState(batchId)).upstreamBatchId).toBe(upstreamBatch.id);
    upstream.end(upstreamBatch.id, (r) => succeeded(r, USAGE));
    expect((await poller.pollOnce(createdAtMs + GATEWAY_BATCH_LOST_SEARCH_AFTER_MS + 120_000)).settled).toContain(batchId);
    expect((await balance()).charged - before.charged).toBe(3 * CHARGE_PER_SUCCESS);
  });

  it('status and error type one fact: an upstream failure that names no error type is answered with its status’s type', async () => {
    const batch = await a.client(key).messages.batches.create({ requests: [request('st-1')] });
    const batches = a.ledger.app.get(GatewayBatches);
    const upstreamBatches = (batches as unknown as { provider: { batches: BatchUpstream } }).provider.batches;
    const gone = jest.spyOn(upstreamBatches, 'retrieve').mockRejectedValueOnce(new BatchUpstreamError(404, undefined, 'no such batch upstream'));
    try {
      await expect(a.client(key).messages.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404, error: { type: 'error', error: { type: 'not_found_error' } } });
    } finally {
      gone.mockRestore();
    }
    upstream.end([...upstream.batches.values()].pop()!.id, expired);
    expect(await batches.settle(batch.id)).toBe('settled');
  });

  it('loses nothing to a crash between fetching results and recording them: the next fetch records and charges them once', async () => {
    const before = await balance();
    const batch = await a.client(key).messages.batches.create({ requests: [request('c-1'), request('c-2')] });
    upstream.end([...upstream.batches.values()].pop()!.id, (r) => succeeded(r, USAGE));
    // The instance fetched the results file and stopped before its first record reached the log.
    const batches = a.ledger.app.get(GatewayBatches);
    const repository = (batches as unknown as { repository: AggregateRepository }).repository;
    const handle = repository.handle.bind(repository);
    const crash = jest.spyOn(repository, 'handle').mockImplementation(async (stream, decider, command, context) => {
      if ((command as { type: string }).type === 'RecordBatchResults') throw new Error('crashed after fetching the results');
      return handle(stream, decider, command, context);
    });
    await expect(batches.settle(batch.id)).rejects.toThrow('crashed after fetching the results');
    crash.mockRestore();
    expect((await batchState(batch.id)).results.size).toBe(0);
    expect((await balance()).held).toBeGreaterThan(before.held);
    expect((await resultsOf(b.client(key), batch.id)).map((l) => l.result.type)).toEqual(['succeeded', 'succeeded']);
    const after = await balance();
    expect(after.charged - before.charged).toBe(2 * CHARGE_PER_SUCCESS);
    expect(after.held).toBe(before.held);
    expect((await a.ledger.http().get('/v1/organizations/acme/balance').set(system())).status).toBe(200);
    expect(holdIdOfBatch(batch.id)).toMatch(/^hold\.msgbatch\./);
  });
});
