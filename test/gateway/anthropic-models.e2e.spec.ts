/**
 * The gateway's routes that hold nothing: `models.list` and `models.retrieve` answered from the rate
 * card (what the key may use), and `countTokens` authenticated and forwarded, neither held nor
 * recorded. On the service's platform (Fastify) and on Express, as an embedding application mounts it.
 */
import { APIError } from '@anthropic-ai/sdk';
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import { MessagesApiServer, messageReply } from '../support/messages-api-server';
import { SERVICE_API_KEY, startGateway, type GatewayApp } from './support/gateway-app';

const KEY = 'llk_acme_models_0123456789abcdefghijklmnop';
const NARROW_KEY = 'llk_acme_narrow_0123456789abcdefghijklmnop';
const MODELS = ['claude-alpha', 'claude-beta', 'claude-gamma', 'claude-delta', 'claude-epsilon'];

describe.each(['fastify', 'express'] as const)('the models list and count_tokens, on %s (docs/gateway.md)', (platform) => {
  let upstream: MessagesApiServer;
  let ledger: InMemoryGatewayAccounting;
  let gateway: GatewayApp;

  beforeAll(async () => {
    upstream = await MessagesApiServer.start();
    ledger = new InMemoryGatewayAccounting({
      keys: [
        { key: KEY, keyId: 'key-all', organizationId: 'acme' },
        { key: NARROW_KEY, keyId: 'key-narrow', organizationId: 'acme', models: ['claude-beta'] },
      ],
      models: MODELS.map((id) => ({ id, attemptTimeoutMs: 30_000, maxOutputTokens: 4_096 })),
      credits: { acme: 1_000_000 },
    });
    gateway = await startGateway({ accounting: ledger, upstreamURL: upstream.baseURL, platform });
  });

  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('lists, through models.list, every model of the rate card the key may use, page by page', async () => {
    const seen: string[] = [];
    for await (const model of gateway.client(KEY).models.list({ limit: 2 })) seen.push(model.id);
    expect(seen).toEqual([...MODELS].sort());
    const narrow: string[] = [];
    for await (const model of gateway.client(NARROW_KEY).models.list()) narrow.push(model.id);
    expect(narrow).toEqual(['claude-beta']);
    expect(upstream.requests).toHaveLength(0);
  });

  it('answers the list in Anthropic’s shape, forwards with after_id and backwards with before_id', async () => {
    const client = gateway.client(KEY);
    const first = await client.models.list({ limit: 2 });
    expect({ data: first.data.map((model) => model.id), has_more: first.has_more, first_id: first.first_id, last_id: first.last_id }).toEqual({
      data: ['claude-alpha', 'claude-beta'],
      has_more: true,
      first_id: 'claude-alpha',
      last_id: 'claude-beta',
    });
    const before = await client.models.list({ limit: 2, before_id: 'claude-epsilon' });
    expect({ data: before.data.map((model) => model.id), has_more: before.has_more }).toEqual({ data: ['claude-beta', 'claude-delta'], has_more: true });
    const last = await client.models.list({ limit: 2, after_id: 'claude-delta' });
    expect({ data: last.data.map((model) => model.id), has_more: last.has_more }).toEqual({ data: ['claude-epsilon', 'claude-gamma'], has_more: false });
  });

  it('retrieves one model, and answers 404 not_found_error for one the key may not use', async () => {
    const model = await gateway.client(KEY).models.retrieve('claude-gamma');
    expect(model).toMatchObject({ type: 'model', id: 'claude-gamma', display_name: 'Model claude-gamma' });
    const error = await gateway.client(NARROW_KEY).models.retrieve('claude-gamma').catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(404);
    expect((error as APIError).type).toBe('not_found_error');
  });

  it('refuses an unknown key, and a limit out of bounds, in Anthropic’s shape', async () => {
    const unknown = await gateway.client('llk_unknown_0123456789abcdefghijklmnop').models.list().catch((thrown: unknown) => thrown);
    expect((unknown as APIError).status).toBe(401);
    expect((unknown as APIError).type).toBe('authentication_error');
    const tooMany = await gateway.client(KEY).models.list({ limit: 1_001 }).catch((thrown: unknown) => thrown);
    expect((tooMany as APIError).status).toBe(400);
    expect((tooMany as APIError).type).toBe('invalid_request_error');
  });

  it('forwards countTokens with the service’s key and relays the count, holding and recording nothing', async () => {
    upstream.requests.length = 0;
    upstream.reply({ kind: 'json', status: 200, body: { input_tokens: 1_234 } });

    const counted = await gateway.client(KEY).messages.countTokens({ model: 'claude-beta', messages: [{ role: 'user', content: 'How many?' }] });

    expect(counted).toEqual({ input_tokens: 1_234 });
    const [sent] = upstream.requests;
    expect(sent!.path).toBe('/v1/messages/count_tokens');
    expect(sent!.headers['x-api-key']).toBe(SERVICE_API_KEY);
    expect(JSON.parse(sent!.rawBody)).toEqual({ model: 'claude-beta', messages: [{ role: 'user', content: 'How many?' }] });
    expect(ledger.admitted).toHaveLength(0);
    expect(ledger.settlements).toHaveLength(0);
  });

  it('refuses countTokens for an unknown key without forwarding it', async () => {
    upstream.requests.length = 0;
    const error = await gateway
      .client('llk_unknown_0123456789abcdefghijklmnop')
      .messages.countTokens({ model: 'claude-beta', messages: [{ role: 'user', content: 'x' }] })
      .catch((thrown: unknown) => thrown);
    expect((error as APIError).status).toBe(401);
    expect(upstream.requests).toHaveLength(0);
  });

  it('forwards a Messages call byte for byte on this platform too', async () => {
    upstream.requests.length = 0;
    upstream.reply(messageReply({}));
    const { response } = await gateway
      .client(KEY)
      .messages.create({ model: 'claude-alpha', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    expect(response.headers.get('llm-ledger-invocation-id')).toEqual(expect.any(String));
    expect(upstream.requests[0]!.rawBody).toBe(JSON.stringify({ model: 'claude-alpha', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] }));
    await ledger.waitForSettlements(1);
  });

  it('answers a path the gateway does not serve with a 404 in Anthropic’s shape', async () => {
    const answer = await fetch(`${gateway.baseURL}/v1/files`, { headers: { 'x-api-key': KEY } });
    expect(answer.status).toBe(404);
    expect(await answer.json()).toEqual({ type: 'error', error: { type: 'not_found_error', message: expect.stringContaining('/v1/files') }, request_id: expect.any(String) });
  });
});
