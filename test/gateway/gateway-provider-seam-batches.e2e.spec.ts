/**
 * Message Batches behind the gateway's provider seam (src/gateway/gateway-provider.port.ts `batches`,
 * docs/gateway.md "Providers"): a provider whose upstream runs batches in a shape of its own (jobs of
 * items, NDJSON output with `metering`, errors as `{ problem, code }`; test/gateway/support/test-provider.ts)
 * serves Anthropic's batch routes through the real service, driven with Anthropic's SDK: held at batch
 * rates before anything goes upstream, each result charged once at its usage, its errors in Anthropic's
 * shape; and a provider without batches answers every batch route 404 in Anthropic's shape.
 */
import Anthropic from '@anthropic-ai/sdk';
import { GatewayBatchesPoller } from '../../src/gateway/batches/gateway-batches.poller';
import { GATEWAY_PROVIDER } from '../../src/gateway/gateway-provider.port';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { batchRequest } from '../support/batches-api-server';
import { GATEWAY_MODEL, GATEWAY_PRICES, startGatewayService, type GatewayService } from './support/gateway-service';
import { TestUpstream, testProvider, UPSTREAM_TOKEN, type TestJobItem, type TestJobOutput } from './support/test-provider';

jest.setTimeout(60_000);

/** A succeeded item's metering: 100 × 3 + 20 × 15 = 600 credits at full price, 300 at the batch's half. */
const METERING = { tokens_in: 100, tokens_out: 20 };
const CHARGE_PER_SUCCESS = 300;

const request = (customId: string) => batchRequest(customId, GATEWAY_MODEL);

const outputOf = (item: TestJobItem): TestJobOutput => (item.ref.startsWith('ok') ? { ref: item.ref, status: 'OK', text: 'Hi', metering: METERING } : { ref: item.ref, status: 'FAILED' });

async function balanceOf(service: GatewayService): Promise<{ held: number; charged: number }> {
  return (await service.ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system)).expect(200)).body as { held: number; charged: number };
}

async function resultsOf(client: Anthropic, batchId: string): Promise<[string, string][]> {
  const lines: [string, string][] = [];
  for await (const line of await client.messages.batches.results(batchId)) lines.push([line.custom_id, line.result.type]);
  return lines;
}

describe('issue 34: a provider’s own batches API behind the seam serves Anthropic’s batch routes', () => {
  let upstream: TestUpstream;
  let service: GatewayService;

  beforeAll(async () => {
    upstream = await TestUpstream.start({});
    service = await startGatewayService({ prices: { ...GATEWAY_PRICES, batchBasisPoints: 5_000 }, overrides: [{ token: GATEWAY_PROVIDER, value: testProvider(upstream.url, { batches: true }) }] });
  });

  afterAll(async () => {
    await service?.close();
    await upstream?.close();
  });

  it('holds the batch before sending it in the provider’s shape, answers in Anthropic’s batch object, and charges each result once at its usage at batch rates however often the results are fetched', async () => {
    const client = service.client();
    const before = await balanceOf(service);
    const batch = await client.messages.batches.create({ requests: [request('ok-1'), request('ok-2'), request('bad-1')] });
    expect(batch).toMatchObject({ id: expect.stringMatching(/^msgbatch_[0-9a-f]{32}$/), type: 'message_batch', processing_status: 'in_progress', results_url: null });
    expect((await balanceOf(service)).held).toBeGreaterThan(before.held);

    // The upstream saw its own shape, with the service's credential.
    const job = upstream.onlyJob();
    const create = upstream.seen.find((seen) => seen.method === 'POST' && seen.path === '/gen/v2/jobs')!;
    expect(create.headers.authorization).toBe(`Bearer ${UPSTREAM_TOKEN}`);
    expect(create.headers['x-api-key']).toBeUndefined();
    expect(job.items.map((item) => [item.ref, item.model])).toEqual([['ok-1', GATEWAY_MODEL], ['ok-2', GATEWAY_MODEL], ['bad-1', GATEWAY_MODEL]]);

    upstream.end(job.name, outputOf);
    const ended = await client.messages.batches.retrieve(batch.id);
    expect(ended).toMatchObject({ id: batch.id, processing_status: 'ended', request_counts: { processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 } });
    expect(ended.results_url).toBe(`${client.baseURL}/v1/messages/batches/${batch.id}/results`);
    const listed = await client.messages.batches.list();
    expect(listed.data.map((listedBatch) => listedBatch.id)).toEqual([batch.id]);

    for (let fetch = 0; fetch < 2; fetch++) expect(await resultsOf(client, batch.id)).toEqual([['ok-1', 'succeeded'], ['ok-2', 'succeeded'], ['bad-1', 'errored']]);
    const after = await balanceOf(service);
    expect(after.charged - before.charged).toBe(2 * CHARGE_PER_SUCCESS);
    expect(after.held).toBe(before.held);

    await expect(client.messages.batches.delete(batch.id)).resolves.toEqual({ id: batch.id, type: 'message_batch_deleted' });
    expect(upstream.jobs.has(job.name)).toBe(false);
  });

  it('settles a batch nobody fetches through the poller, from the provider’s output', async () => {
    const before = await balanceOf(service);
    const batch = await service.client().messages.batches.create({ requests: [request('ok-a'), request('bad-a')] });
    const job = [...upstream.jobs.values()].at(-1)!;
    upstream.end(job.name, outputOf);
    const polled = await service.ledger.app.get(GatewayBatchesPoller).pollOnce();
    expect(polled.settled).toEqual([batch.id]);
    const after = await balanceOf(service);
    expect(after.charged - before.charged).toBe(CHARGE_PER_SUCCESS);
    expect(after.held).toBe(before.held);
  });

  it('puts the provider’s error answers in Anthropic’s shape: a refused create is the SDK’s error class for that type, and its hold is released', async () => {
    const before = await balanceOf(service);
    upstream.refuseNext({ status: 429, problem: 'job quota used up', code: 'QUOTA' });
    const error = await service.client().messages.batches.create({ requests: [request('ok-q')] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const { error: body } = error as InstanceType<typeof Anthropic.APIError>;
    expect(body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', message: expect.stringContaining('job quota used up (QUOTA)') } });
    expect(await balanceOf(service)).toMatchObject({ held: before.held, charged: before.charged });

    const missing = await service.client().messages.batches.retrieve(`msgbatch_${'0'.repeat(32)}`).catch((caught: unknown) => caught);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
  });
});

describe('issue 34: a provider without batches answers every batch route 404 in Anthropic’s shape, saying so', () => {
  let upstream: TestUpstream;
  let service: GatewayService;

  beforeAll(async () => {
    upstream = await TestUpstream.start({});
    service = await startGatewayService({ prices: { ...GATEWAY_PRICES, batchBasisPoints: 5_000 }, overrides: [{ token: GATEWAY_PROVIDER, value: testProvider(upstream.url) }] });
  });

  afterAll(async () => {
    await service?.close();
    await upstream?.close();
  });

  it.each([
    ['create', (client: Anthropic) => client.messages.batches.create({ requests: [request('ok-1')] })],
    ['list', (client: Anthropic) => client.messages.batches.list()],
    ['retrieve', (client: Anthropic) => client.messages.batches.retrieve(`msgbatch_${'0'.repeat(32)}`)],
    ['cancel', (client: Anthropic) => client.messages.batches.cancel(`msgbatch_${'0'.repeat(32)}`)],
  ])('%s: 404 not_found_error naming the provider; nothing held, nothing sent upstream', async (_route, call) => {
    const error = await call(service.client()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: "Message Batches are not available: the gateway's upstream (test-generation-api) has no batches API." },
      request_id: expect.any(String),
    });
    expect((await balanceOf(service)).held).toBe(0);
    expect(upstream.seen).toEqual([]);
  });
});
