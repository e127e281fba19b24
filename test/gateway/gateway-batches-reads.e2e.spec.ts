/**
 * The Message Batches' admin reads (docs/http.md, docs/gateway.md "Message Batches"): an
 * organization's batches, newest first, each explained (status, requests, results by type, hold,
 * charge), and a batch's requests with their results as charged, page by page; what the console's
 * batches view reads. Another organization's token sees none of them.
 */
import { bearer, TOKENS } from '../http/support/http-ledger';
import { BatchesApiServer, batchRequest, errored, succeeded, type UpstreamBatchRequest } from '../support/batches-api-server';
import { GATEWAY_KEY_NAME, GATEWAY_MODEL, GATEWAY_PRICES, startGatewayService, type GatewayService } from './support/gateway-service';

jest.setTimeout(60_000);

const request = (customId: string) => batchRequest(customId, GATEWAY_MODEL);

describe('issue 34: the Message Batches’ admin reads: the organization’s batches and a batch’s requests, explained and paged', () => {
  let upstream: BatchesApiServer;
  let service: GatewayService;
  const batchIds: string[] = [];

  beforeAll(async () => {
    upstream = await BatchesApiServer.start();
    service = await startGatewayService({ prices: { ...GATEWAY_PRICES, batchBasisPoints: 5_000 }, env: { ANTHROPIC_BASE_URL: upstream.baseURL } });
    const client = service.client();
    // The first settled (2 succeeded at 100 in, 20 out: 300 credits each at half price; 1 errored); the second left in progress.
    batchIds.push((await client.messages.batches.create({ requests: [request('ok-1'), request('ok-2'), request('bad-1')] })).id);
    const [first] = upstream.batches.keys();
    upstream.end(first!, (r: UpstreamBatchRequest) => (r.custom_id.startsWith('ok') ? succeeded(r, { input_tokens: 100, output_tokens: 20 }) : errored(r)));
    for await (const _line of await client.messages.batches.results(batchIds[0]!));
    batchIds.push((await client.messages.batches.create({ requests: [request('later-1')] })).id);
  });

  afterAll(async () => {
    await service?.close();
    await upstream?.close();
  });

  const get = (path: string, token: string = TOKENS.system) => service.ledger.http().get(`/v1/organizations/acme/gateway-batches${path}`).set(bearer(token));

  it('lists the organization’s batches newest first, each with its status, requests, results, hold, charge and model', async () => {
    const { body } = await get('').expect(200);
    expect(body.nextAfter).toBeNull();
    expect(body.batches.map((batch: { batchId: string }) => batch.batchId)).toEqual([batchIds[1], batchIds[0]]);
    const [inProgress, settled] = body.batches;
    expect(settled).toMatchObject({ status: 'settled', keyName: GATEWAY_KEY_NAME, requestCount: 3, results: { succeeded: 2, errored: 1, canceled: 0, expired: 0 }, chargeCredits: 600, rateCards: [{ model: GATEWAY_MODEL, batchBasisPoints: 5_000 }] });
    expect(settled.holdCredits).toBeGreaterThan(600);
    expect(inProgress).toMatchObject({ status: 'submitted', requestCount: 1 });
    expect(inProgress).not.toHaveProperty('chargeCredits');
    // Each entry is the batch's own explanation.
    expect((await get(`/${batchIds[0]}`).expect(200)).body).toEqual(settled);
  });

  it('pages the list with limit and after, and names `after` when it is not in the list', async () => {
    const first = (await get('?limit=1').expect(200)).body;
    expect(first.batches.map((batch: { batchId: string }) => batch.batchId)).toEqual([batchIds[1]]);
    expect(first.nextAfter).toBe(batchIds[1]);
    const second = (await get(`?limit=1&after=${first.nextAfter}`).expect(200)).body;
    expect(second).toMatchObject({ batches: [{ batchId: batchIds[0] }], nextAfter: null });
    expect((await get(`?after=msgbatch_${'0'.repeat(32)}`).expect(400)).body.fields).toHaveProperty('after');
    expect((await get('?limit=101').expect(400)).body.fields).toHaveProperty('limit');
  });

  it('lists a batch’s requests in the order sent, each with its result as charged', async () => {
    const { body } = await get(`/${batchIds[0]}/requests`).expect(200);
    expect(body.nextAfter).toBeNull();
    expect(body.requests.map((r: { customId: string; result?: { type: string; priceCredits: number } }) => [r.customId, r.result?.type, r.result?.priceCredits])).toEqual([
      ['ok-1', 'succeeded', 300],
      ['ok-2', 'succeeded', 300],
      ['bad-1', 'errored', 0],
    ]);
    const paged = (await get(`/${batchIds[0]}/requests?limit=2&after=ok-1`).expect(200)).body;
    expect(paged.requests.map((r: { customId: string }) => r.customId)).toEqual(['ok-2', 'bad-1']);
    expect(paged.nextAfter).toBeNull();
  });

  it('shows another organization’s member none of them: an empty list and 404 for the batch', async () => {
    await service.ledger.http().get('/v1/organizations/other/gateway-batches').set(bearer(TOKENS.system)).expect(200, { batches: [], nextAfter: null });
    await get('', TOKENS.globexMember).expect(404);
    expect((await get('', TOKENS.acmeMember).expect(200)).body.batches).toHaveLength(2);
    await service.ledger.http().get(`/v1/organizations/other/gateway-batches/${batchIds[0]}/requests`).set(bearer(TOKENS.system)).expect(404);
  });
});
