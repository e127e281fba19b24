/**
 * Upstream faults through the gateway, as Anthropic's SDK sees them and as the accounting is told:
 * error answers relayed with their status and body and classified as the provider adapter classifies
 * them (docs/rules.md, rules 05 and 06); an `error` event mid-stream relayed and the call settled on the usage seen; an
 * upstream that stalls past the call's time bound cut (its usage unknown, so charged its hold); one whose connection breaks.
 */
import { APIError } from '@anthropic-ai/sdk';
import { VirtualClock } from '../../src/runtime/clock';
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import { errorReply, MessagesApiServer, messageStream } from '../support/messages-api-server';
import { startGateway, type GatewayApp } from './support/gateway-app';

const KEY = 'llk_acme_faults_0123456789abcdefghijklmnop';
const MODEL = 'claude-gateway-test';
const ATTEMPT_TIMEOUT_MS = 20_000;
const PROMPT = { model: MODEL, max_tokens: 512, messages: [{ role: 'user' as const, content: 'Go.' }] };

describe('upstream faults are relayed as Anthropic sent them and settled with their class (docs/rules.md rules 05–06, docs/gateway.md)', () => {
  let upstream: MessagesApiServer;
  let ledger: InMemoryGatewayAccounting;
  let gateway: GatewayApp;
  let clock: VirtualClock;

  beforeEach(async () => {
    upstream = await MessagesApiServer.start();
    clock = new VirtualClock({ startMs: 1_000_000, autoAdvance: false });
    ledger = new InMemoryGatewayAccounting({
      keys: [{ key: KEY, keyId: 'key-faults', organizationId: 'acme' }],
      models: [{ id: MODEL, attemptTimeoutMs: ATTEMPT_TIMEOUT_MS, maxOutputTokens: 4_096 }],
      credits: { acme: 1_000_000 },
    });
    gateway = await startGateway({ accounting: ledger, upstreamURL: upstream.baseURL, clock });
  });

  afterEach(async () => {
    await gateway.close();
    await upstream.close();
  });

  /** What the SDK threw for the call. */
  const failure = (call: Promise<unknown>): Promise<APIError> =>
    call.then(
      () => {
        throw new Error('the call succeeded');
      },
      (error: unknown) => {
        if (!(error instanceof APIError)) throw error;
        return error;
      },
    );

  it.each<[number, string, string]>([
    [429, 'rate_limit_error', 'rate_limited'],
    [500, 'api_error', 'server_error'],
    [529, 'overloaded_error', 'overloaded'],
    [400, 'invalid_request_error', 'malformed_request'],
  ])('relays an upstream %i %s with its status, body, request id and retry-after, classified %s', async (status, type, classification) => {
    upstream.reply(errorReply(status, type, `upstream says ${type}`, { headers: { 'retry-after': '7' } }));

    const error = await failure(gateway.client(KEY).messages.create(PROMPT));

    expect(error.status).toBe(status);
    expect(error.type).toBe(type);
    expect(error.error).toEqual({ type: 'error', error: { type, message: `upstream says ${type}` }, request_id: 'req_fake_error' });
    expect(error.requestID).toBe('req_fake_0001');
    expect(error.headers?.get('retry-after')).toBe('7');
    expect(error.headers?.get('llm-ledger-invocation-id')).toBe('gw-call-1');
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification, httpStatus: status, providerRequestId: 'req_fake_0001', timedOut: false, callerDisconnected: false });
    expect(settled!.outcome.usage).toBeUndefined();
  });

  it('classifies an upstream spend-limit error as credit_exhausted, as the provider adapter does, never as load', async () => {
    upstream.reply(errorReply(429, 'rate_limit_error', 'limit', { details: { error_code: 'monthly_spend_limit_reached' } }));

    await failure(gateway.client(KEY).messages.create(PROMPT));

    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome.classification).toBe('credit_exhausted');
  });

  it('relays an error event mid-stream, which the SDK raises, and settles on the usage seen before it', async () => {
    const [start, blockStart, ping, delta] = messageStream({ startUsage: { input_tokens: 64, output_tokens: 1 } });
    upstream.reply({
      kind: 'sse',
      steps: [start!, blockStart!, ping!, delta!, { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }],
    });

    const stream = gateway.client(KEY).messages.stream(PROMPT);
    const error = await failure(stream.finalMessage());

    expect(error.message).toContain('Overloaded');
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'overloaded', httpStatus: 200, usage: { inputTokens: 64, outputTokens: 1 }, timedOut: false });
  });

  it('aborts an upstream that stalls past the call’s time bound: a 504 timeout_error, settled as timedOut', async () => {
    upstream.reply({ kind: 'stall' });

    const call = failure(gateway.client(KEY).messages.create(PROMPT));
    await upstream.waitForRequests(1);
    await clock.advance(ATTEMPT_TIMEOUT_MS - 1);
    expect(ledger.settlements).toHaveLength(0);
    await clock.advance(1);
    const error = await call;

    expect(error.status).toBe(504);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'timeout_error' }, request_id: expect.any(String) });
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'timeout', timedOut: true, durationMs: ATTEMPT_TIMEOUT_MS, startedAtMs: 1_000_000 });
    expect(settled!.outcome.httpStatus).toBeUndefined();
  });

  it('ends a stream that stalls past the time bound with an error event after what was relayed, settled as timedOut with no usage: the gateway cut upstream, so it is charged its hold', async () => {
    const [start, blockStart, ping, delta] = messageStream({ texts: ['partial'], startUsage: { input_tokens: 33, output_tokens: 1 } });
    upstream.reply({ kind: 'sse', steps: [start!, blockStart!, ping!, delta!, { end: 'stall' }] });

    const texts: string[] = [];
    const stream = gateway.client(KEY).messages.stream(PROMPT);
    stream.on('text', (text) => texts.push(text));
    const ended = failure(stream.finalMessage());
    await new Promise<void>((resolve) => stream.once('text', () => resolve()));
    await clock.advance(ATTEMPT_TIMEOUT_MS);
    const error = await ended;

    expect(texts).toEqual(['partial']);
    expect(error.message).toContain('time bound');
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'timeout', timedOut: true, httpStatus: 200 });
    // message_start's usage is not the call's: upstream went on generating until the gateway cut it.
    expect(settled!.outcome.usage).toBeUndefined();
    expect(settled!.charge).toBe(settled!.admission.holdCredits);
  });

  it('answers a connection upstream breaks before answering with a 502 api_error, classified connection', async () => {
    upstream.reply({ kind: 'reset' });

    const error = await failure(gateway.client(KEY).messages.create(PROMPT));

    expect(error.status).toBe(502);
    expect(error.type).toBe('api_error');
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'connection', timedOut: false });
  });

  it('breaks the caller’s connection when upstream’s breaks mid-stream, settled as connection with the usage seen', async () => {
    const [start, blockStart, ping, delta] = messageStream({ startUsage: { input_tokens: 12, output_tokens: 1 } });
    upstream.reply({ kind: 'sse', steps: [start!, blockStart!, ping!, delta!, { raw: 'event: content_block_delta\ndata: {"type":"content_bl' }, { end: 'reset' }] });

    const outcome = await gateway
      .client(KEY)
      .messages.stream(PROMPT)
      .finalMessage()
      .then(
        () => 'finished',
        (error: Error) => error.constructor.name,
      );

    expect(outcome).not.toBe('finished');
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({ classification: 'connection', httpStatus: 200, usage: { inputTokens: 12 } });
  });

  it('cuts a call in flight when the service shuts down, and settles it (cancelled, no usage: its hold) before shutdown ends', async () => {
    const [start, blockStart, ping, delta] = messageStream({ startUsage: { input_tokens: 21, output_tokens: 1 } });
    upstream.reply({ kind: 'sse', steps: [start!, blockStart!, ping!, delta!, { end: 'stall' }] });
    const stream = gateway.client(KEY).messages.stream(PROMPT);
    const ended = stream.finalMessage().then(
      () => 'finished',
      () => 'failed',
    );
    await new Promise<void>((resolve) => stream.once('text', () => resolve()));

    await gateway.close();

    expect(ledger.settlements).toHaveLength(1);
    expect(ledger.settlements[0]!.outcome).toMatchObject({ classification: 'cancelled', timedOut: false });
    expect(ledger.settlements[0]!.outcome.usage).toBeUndefined();
    expect(ledger.settlements[0]!.charge).toBe(ledger.settlements[0]!.admission.holdCredits);
    expect(await ended).toBe('failed');
  });
});
