/**
 * A gateway key's lifetime and rate limits through the real service (issue 33; docs/gateway.md "Keys",
 * "Rate limits"): `expiresAt`, rotation with a grace, `maxConcurrent`, `requestsPerMinute` and
 * `tokensPerMinute` on the `/anthropic` routes, streamed calls included. Time is the service's clock,
 * moved by the test: no sleeps.
 */
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { KEY_CONCURRENCY_RETRY_AFTER_SECONDS } from '../../src/accounts/gateway-keys';
import { INVOCATION_ID_HEADER } from '../../src/gateway/anthropic-error.body';
import { GATEWAY_ACCOUNTING, type GatewayAccounting } from '../../src/gateway/gateway-call.port';
import { GatewayRejections } from '../../src/gateway/gateway-rejections';
import { RATE_CARD_STREAM } from '../../src/gateway/rate-card';
import { REQUEST_ALLOWANCE_TOKENS } from '../../src/gateway/worst-case-hold';
import { messageReply, messageStream } from '../support/messages-api-server';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { ShiftedClock } from '../support/shifted-clock';
import { NO_TOOLS } from './support/body-facts';
import { GATEWAY_MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

const MAX_TOKENS = 1_000;
/** A small Messages body; streamed when asked. */
const body = (stream = false): string => JSON.stringify({ model: GATEWAY_MODEL, max_tokens: MAX_TOKENS, ...(stream ? { stream: true } : {}), messages: [{ role: 'user', content: 'Hello' }] });
/** Its worst case in tokens, as the hold counts it: the body's bytes, the request's framing, and max_tokens. */
const worstCaseTokensOf = (text: string): number => Buffer.byteLength(text) + REQUEST_ALLOWANCE_TOKENS + MAX_TOKENS;
/** Ten seconds into a UTC minute, so a refusal in it waits 50 s. */
const MINUTE_START_MS = Date.UTC(2026, 11, 3, 10, 0, 0);

describe('a gateway key’s lifetime and rate limits on the /anthropic routes (issue 33)', () => {
  let service: GatewayService;
  let clock: ShiftedClock;
  const system = bearer(TOKENS.system);

  beforeAll(async () => {
    clock = new ShiftedClock();
    clock.jumpTo(MINUTE_START_MS + 10_000);
    // Recovery off: a jump of the clock past the lease would look like a long pause to a recovery pass.
    service = await startGatewayService({ clock, env: { LEDGER_RECOVERY_INTERVAL_MS: '0' } });
  });
  afterAll(() => service.close());
  beforeEach(() => clock.jumpTo(MINUTE_START_MS + 10_000));

  const keys = () => service.ledger.http().post('/v1/organizations/acme/gateway-keys').set(system);
  const issue = async (settings: Record<string, unknown>): Promise<{ key: string; keyId: string }> => (await keys().send({ name: 'limited', ...settings }).expect(200)).body;
  const call = (key: string, text = body()) =>
    service.ledger.http().post('/anthropic/v1/messages').set('x-api-key', key).set('anthropic-version', '2023-06-01').set('content-type', 'application/json').send(text);
  const refusedWith = async (answer: { status: number; body: { type?: string; error?: { type?: string; message?: string } } }, status: number, type: string): Promise<string> => {
    expect({ status: answer.status, shape: answer.body.type, type: answer.body.error?.type }).toEqual({ status, shape: 'error', type });
    return answer.body.error?.message ?? '';
  };
  /** The key's one refused invocation (each test's key is its own), and its explanation. */
  const onlyRefusal = async (keyId: string) => {
    const list = await service.ledger.http().get('/v1/organizations/acme/invocations?state=refused').set(system).expect(200);
    const mine = (list.body.invocations as { invocationId: string; gateway?: { keyId: string } }[]).filter((item) => item.gateway?.keyId === keyId);
    expect(mine).toHaveLength(1);
    const invocationId = mine[0]!.invocationId;
    const view = (await service.ledger.http().get(`/v1/invocations/${invocationId}`).set(system).expect(200)).body;
    const explanation = (await service.ledger.http().get(`/v1/invocations/${invocationId}/explanation`).set(system).expect(200)).body;
    return { view, sentence: explanation.sentence as string };
  };

  describe('key lifetime: expiresAt and rotation', () => {
    it('refuses an expiresAt that is not in the future, naming expiresAt (400), on issue and change', async () => {
      const past = await keys().send({ name: 'x', expiresAt: new Date(clock.now() - 1).toISOString() }).expect(400);
      expect(Object.keys(past.body.fields)).toEqual(['expiresAt']);
      const notADate = await keys().send({ name: 'x', expiresAt: 'next week' }).expect(400);
      expect(Object.keys(notADate.body.fields)).toEqual(['expiresAt']);
      const { keyId } = await issue({});
      const change = await service.ledger.http().patch(`/v1/organizations/acme/gateway-keys/${keyId}`).set(system).send({ name: 'x', expiresAt: new Date(clock.now()).toISOString() }).expect(400);
      expect(Object.keys(change.body.fields)).toEqual(['expiresAt']);
    });

    it('answers calls until expiresAt, then 401 authentication_error saying the key expired, with nothing held or sent', async () => {
      const expiresAt = new Date(clock.now() + 60_000).toISOString();
      const { key } = await issue({ expiresAt });
      service.upstream.reply(messageReply({}));
      expect((await call(key)).status).toBe(200);
      clock.advance(60_000);
      const before = service.upstream.requests.length;
      expect(await refusedWith(await call(key), 401, 'authentication_error')).toBe(`x-api-key: the key expired at ${expiresAt}`);
      expect(service.upstream.requests).toHaveLength(before);
    });

    it('refuses a call whose key expires between its key check and its hold: recorded as key_expired (transition 1), 401, nothing held (STATE-PFM-LLM-001 transition 1)', async () => {
      const expiresAt = new Date(clock.now() + 1_000).toISOString();
      const { key, keyId } = await issue({ expiresAt });
      const repository = service.ledger.app.get(AggregateRepository);
      const load = repository.load.bind(repository);
      // The key check reads the account; the rate card is read next, before the hold: the key expires then.
      const spy = jest.spyOn(repository, 'load').mockImplementation(async (...args: Parameters<AggregateRepository['load']>) => {
        if (args[0] === RATE_CARD_STREAM) clock.advance(1_000);
        return load(...args);
      });
      let admission;
      try {
        admission = await service.ledger.app.get<GatewayAccounting>(GATEWAY_ACCOUNTING).admit({
          presentedKey: key,
          facts: { bodyBytes: 100, model: GATEWAY_MODEL, maxTokens: 10, stream: false, imageBlocks: 0, documentBlocks: 0, ...NO_TOOLS },
          requestId: 'r',
        });
      } finally {
        spy.mockRestore();
      }
      expect(admission).toMatchObject({ admitted: false, status: 401, errorType: 'authentication_error', message: `x-api-key: the key expired at ${expiresAt}`, invocationId: expect.any(String) });
      const { view, sentence } = await onlyRefusal(keyId);
      expect(view).toMatchObject({ state: 'refused', refusalReason: 'key_expired', charge: 0 });
      expect(sentence).toContain(`refused (401 key_expired): key ${keyId} expired at ${expiresAt}, so nothing was held or sent upstream`);
      const balance = await service.ledger.http().get('/v1/organizations/acme/balance').set(system).expect(200);
      expect(balance.body).toMatchObject({ held: 0, running: 0 });
    });

    it('rotates a key: a new secret for the same key, spend and limits; the old secret works until the grace ends, then 401', async () => {
      const { key: old, keyId } = await issue({ requestsPerMinute: 100 });
      service.upstream.reply(messageReply({}), messageReply({}), messageReply({}), messageReply({}));
      expect((await call(old)).status).toBe(200);
      const rotated = await service.ledger.http().post(`/v1/organizations/acme/gateway-keys/${keyId}/rotate`).set(system).send({ graceSeconds: 30 }).expect(200);
      const fresh = rotated.body.key as string;
      expect(fresh).not.toBe(old);
      expect(rotated.body).toMatchObject({ keyId, requestsPerMinute: 100, previousSecretValidUntil: new Date(Date.parse(rotated.body.rotatedAt) + 30_000).toISOString() });
      expect((await call(old)).status).toBe(200);
      expect((await call(fresh)).status).toBe(200);
      clock.advance(30_000);
      expect(await refusedWith(await call(old), 401, 'authentication_error')).toMatch(/^x-api-key: this secret was rotated, and its grace ended at /);
      expect((await call(fresh)).status).toBe(200);
      // The same key: three calls counted in its spend, the secrets alike.
      const listed = (await service.ledger.http().get('/v1/organizations/acme/gateway-keys').set(system).expect(200)).body.keys.find((k: { keyId: string }) => k.keyId === keyId);
      expect(listed).toMatchObject({ keyId, rotatedAt: expect.any(String), spentCredits: expect.any(Number) });
      expect(listed).not.toHaveProperty('previousSecretValidUntil');
      expect(JSON.stringify(listed)).not.toContain(fresh.split('.')[1]);
    });

    it('refuses a rotation with a grace out of bounds or missing (400 naming graceSeconds), and of a revoked key (404)', async () => {
      const { keyId } = await issue({});
      const rotate = (sent: Record<string, unknown>) => service.ledger.http().post(`/v1/organizations/acme/gateway-keys/${keyId}/rotate`).set(system).send(sent);
      for (const sent of [{}, { graceSeconds: -1 }, { graceSeconds: 2_592_001 }, { graceSeconds: 'soon' }]) {
        expect(Object.keys((await rotate(sent).expect(400)).body.fields)).toEqual(['graceSeconds']);
      }
      await service.ledger.http().delete(`/v1/organizations/acme/gateway-keys/${keyId}`).set(system).expect(200);
      await rotate({ graceSeconds: 0 }).expect(404);
    });
  });

  describe('rate limits, decided in the hold', () => {
    it('refuses a rate limit of 0 or past its bound, naming the field (400)', async () => {
      const answer = await keys().send({ name: 'x', maxConcurrent: 0, requestsPerMinute: 1_000_001, tokensPerMinute: 1.5 }).expect(400);
      expect(Object.keys(answer.body.fields).sort()).toEqual(['maxConcurrent', 'requestsPerMinute', 'tokensPerMinute']);
    });

    it('maxConcurrent: a streamed call in flight fills the key; the next is 429 rate_limit_error with retry-after, recorded as key_rate_limit and explained', async () => {
      const { key, keyId } = await issue({ maxConcurrent: 1 });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      service.upstream.reply({ kind: 'sse', steps: messageStream({ after: [{ until: gate }] }) }, messageReply({}));
      const before = service.upstream.requests.length;
      const streaming = call(key, body(true)).then((answer) => answer);
      await service.upstream.waitForRequests(before + 1);
      const refused = await call(key);
      expect(await refusedWith(refused, 429, 'rate_limit_error')).toBe('key "limited" rate limit: key ' + keyId + ' may have 1 calls in flight and has 1');
      expect(refused.headers['retry-after']).toBe(String(KEY_CONCURRENCY_RETRY_AFTER_SECONDS));
      const { view, sentence } = await onlyRefusal(keyId);
      expect(view).toMatchObject({ state: 'refused', refusalReason: 'key_rate_limit', charge: 0 });
      expect(sentence).toContain('refused (429 key_rate_limit): key');
      // The key's listing counts the call in flight and what it holds, from the account's kept figures.
      const listedKey = async () => (await service.ledger.http().get('/v1/organizations/acme/gateway-keys').set(system).expect(200)).body.keys.find((k: { keyId: string }) => k.keyId === keyId);
      expect(await listedKey()).toMatchObject({ inFlight: 1, heldCredits: expect.any(Number) });
      expect((await listedKey()).heldCredits).toBeGreaterThan(0);
      release();
      const answered = await streaming;
      expect(answered.status).toBe(200);
      await settledView(service.ledger, answered.headers[INVOCATION_ID_HEADER]!);
      expect(await listedKey()).toMatchObject({ inFlight: 0, heldCredits: 0 });
      expect((await call(key)).status).toBe(200);
    });

    it('requestsPerMinute: the call past the minute’s count is 429 with retry-after the seconds until the minute rolls; the next minute admits again', async () => {
      const { key } = await issue({ requestsPerMinute: 2 });
      service.upstream.reply(messageReply({}), messageReply({}), messageReply({}));
      expect((await call(key)).status).toBe(200);
      expect((await call(key)).status).toBe(200);
      const refused = await call(key);
      expect(await refusedWith(refused, 429, 'rate_limit_error')).toMatch(/may have 2 calls admitted per minute and had 2 in 2026-12-03T10:00 UTC$/);
      expect(refused.headers['retry-after']).toBe('50');
      clock.jumpTo(MINUTE_START_MS + 60_000);
      expect((await call(key)).status).toBe(200);
    });

    it('tokensPerMinute: a streamed call holds its worst-case tokens while in flight, and its settlement trues the minute up to its reported usage', async () => {
      const streamed = body(true);
      const worst = worstCaseTokensOf(streamed);
      // Room for one worst case and a half: a second call fits only once the first is trued up.
      const { key, keyId } = await issue({ tokensPerMinute: worst + Math.floor(worst / 2) });
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      // Reported: 25 input + 12 output tokens.
      service.upstream.reply({ kind: 'sse', steps: messageStream({ after: [{ until: gate }] }) }, { kind: 'sse', steps: messageStream({}) });
      const before = service.upstream.requests.length;
      const first = call(key, streamed).then((answer) => answer);
      await service.upstream.waitForRequests(before + 1);
      const refused = await call(key, streamed);
      expect(await refusedWith(refused, 429, 'rate_limit_error')).toContain(`its calls in 2026-12-03T10:00 UTC count ${worst}, and this call's worst case of ${worst} would pass it`);
      expect(refused.headers['retry-after']).toBe('50');
      release();
      const answered = await first;
      expect(answered.status).toBe(200);
      await settledView(service.ledger, answered.headers[INVOCATION_ID_HEADER]!);
      const listed = (await service.ledger.http().get('/v1/organizations/acme/gateway-keys').set(system).expect(200)).body.keys.find((k: { keyId: string }) => k.keyId === keyId);
      expect(listed.currentMinute).toEqual({ minute: '2026-12-03T10:00', requests: 1, tokens: 25 + 12 });
      expect((await call(key, streamed)).status).toBe(200);
    });

    it('tokensPerMinute: a call whose worst case alone passes the limit is 400 invalid_request_error naming max_tokens with the figures, counted as a rejection before admission; nothing held or sent', async () => {
      const worst = worstCaseTokensOf(body());
      const { key, keyId } = await issue({ tokensPerMinute: worst - 1 });
      const before = service.upstream.requests.length;
      const refused = await call(key);
      expect(await refusedWith(refused, 400, 'invalid_request_error')).toBe(
        `max_tokens: this call's worst case is ${worst} tokens (an input bound of ${worst - MAX_TOKENS} plus max_tokens ${MAX_TOKENS}), over key "limited"'s tokensPerMinute of ${worst - 1}, so it can never be admitted; lower max_tokens or raise tokensPerMinute`,
      );
      expect(refused.headers['retry-after']).toBeUndefined();
      expect(service.upstream.requests).toHaveLength(before);
      await service.ledger.app.get(GatewayRejections).flush();
      const listed = (await service.ledger.http().get('/v1/organizations/acme/gateway-keys').set(system).expect(200)).body.keys.find((k: { keyId: string }) => k.keyId === keyId);
      expect(listed).toMatchObject({ rejections: { max_tokens_over_tokens_per_minute: 1 }, inFlight: 0 });
      expect(listed.currentMinute).toBeUndefined();
    });

    it('tokensPerMinute lowered between the key check and the hold below the call’s worst case: refused at the hold as key_worst_case_tokens (transition 1), 400 naming max_tokens, nothing held (STATE-PFM-LLM-001 transition 1)', async () => {
      const worst = worstCaseTokensOf(body());
      const { key, keyId } = await issue({ tokensPerMinute: worst });
      const repository = service.ledger.app.get(AggregateRepository);
      const load = repository.load.bind(repository);
      let lowered = false;
      // The key check reads the account; the rate card is read next, before the hold: the limit falls then.
      const spy = jest.spyOn(repository, 'load').mockImplementation(async (...args: Parameters<AggregateRepository['load']>) => {
        if (args[0] === RATE_CARD_STREAM && !lowered) {
          lowered = true;
          await service.ledger.http().patch(`/v1/organizations/acme/gateway-keys/${keyId}`).set(system).send({ name: 'limited', tokensPerMinute: worst - 1 }).expect(200);
        }
        return load(...args);
      });
      let refused;
      try {
        refused = await call(key);
      } finally {
        spy.mockRestore();
      }
      expect(lowered).toBe(true);
      expect(await refusedWith(refused, 400, 'invalid_request_error')).toContain(`max_tokens: this call's worst case is ${worst} tokens`);
      const { view, sentence } = await onlyRefusal(keyId);
      expect(view).toMatchObject({ state: 'refused', refusalReason: 'key_worst_case_tokens', charge: 0 });
      expect(sentence).toContain(`refused (400 key_worst_case_tokens): the key's tokensPerMinute was lowered to ${(worst - 1).toLocaleString('en-US')} before the hold was placed, below the call's worst case of ${worst.toLocaleString('en-US')} tokens`);
      const balance = await service.ledger.http().get('/v1/organizations/acme/balance').set(system).expect(200);
      expect(balance.body).toMatchObject({ held: 0, running: 0 });
    });
  });
});
