import { AnthropicProvider, AnthropicLogger, parseRetryAfterMs } from '../../../src/providers/anthropic';
import { FaultClass, ProviderFault } from '../../../src/runtime/faults';
import type { ProviderRequest, SendOptions } from '../../../src/runtime/provider.port';
import {
  closedPortBaseURL,
  errorReply,
  MessagesApiServer,
  messageReply,
  ScriptedReply,
} from '../../support/messages-api-server';

const API_KEY = 'sk-ant-test-SECRET-7f3a9c2e51d84b06';
/** Generous for answers that arrive at once; never reached in a passing test. */
const ATTEMPT_TIMEOUT_MS = 5_000;
/**
 * Short, for the tests where the server stalls and the attempt's own timer must end it; long enough
 * that the request reaches the server first on a loaded machine (at 100 ms it sometimes did not).
 */
const SHORT_ATTEMPT_TIMEOUT_MS = 1_000;

const request: ProviderRequest = {
  model: 'claude-published-model',
  maxOutputTokens: 256,
  system: [{ type: 'text', text: 'Be brief.' }],
  tools: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'What is 6*7?' }] }],
};

function sendOptions(overrides: Partial<SendOptions> = {}): SendOptions {
  return { timeoutMs: ATTEMPT_TIMEOUT_MS, signal: new AbortController().signal, ...overrides };
}

async function faultOf(promise: Promise<unknown>): Promise<ProviderFault> {
  const outcome = await promise.then(
    () => new Error('expected the attempt to fail'),
    (error: unknown) => error,
  );
  if (!(outcome instanceof ProviderFault)) throw outcome;
  return outcome;
}

function recordingLogger(lines: string[]): AnthropicLogger {
  const record = (message: string, ...rest: unknown[]): void => {
    lines.push([message, ...rest.map((item) => JSON.stringify(item) ?? String(item))].join(' '));
  };
  return { error: record, warn: record, info: record, debug: record };
}

describe('AnthropicProvider maps every HTTP error body to its docs/rules.md class (BR-CAP-PFM-LLM-002-05, BR-CAP-PFM-LLM-002-06, ATS-PFM-LLM-002-05, ATS-PFM-LLM-002-06)', () => {
  let server: MessagesApiServer;
  let provider: AnthropicProvider;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
    provider = new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL });
  });

  afterEach(async () => {
    await server.close();
  });

  const cases: ReadonlyArray<[string, ScriptedReply, FaultClass, boolean]> = [
    ['400 invalid_request_error is the request’s own fault', errorReply(400, 'invalid_request_error', 'max_tokens: must be at least 1'), 'malformed_request', false],
    [
      '400 “credit balance is too low” is a purchase problem, not a bad request',
      errorReply(400, 'invalid_request_error', 'Your credit balance is too low to access the Anthropic API. Please buy more credits.'),
      'credit_exhausted',
      false,
    ],
    ['402 billing_error is a purchase problem', errorReply(402, 'billing_error', 'The payment method on file was declined.'), 'credit_exhausted', false],
    [
      '429 with a spend-limit error code is a purchase problem, not load',
      errorReply(429, 'rate_limit_error', 'The monthly spend limit of this tier is reached.', { details: { error_code: 'enforced_spend_limit_reached' } }),
      'credit_exhausted',
      false,
    ],
    ['401 authentication_error', errorReply(401, 'authentication_error', 'The key was not accepted.'), 'unauthorized', false],
    ['403 permission_error', errorReply(403, 'permission_error', 'This key may not use that model.'), 'unauthorized', false],
    ['404 not_found_error', errorReply(404, 'not_found_error', 'No such model.'), 'malformed_request', false],
    ['413 request_too_large', errorReply(413, 'request_too_large', 'The body is over the byte limit.'), 'malformed_request', false],
    ['409 conflict_error', errorReply(409, 'conflict_error', 'Concurrent change.'), 'conflict', true],
    ['429 rate_limit_error', errorReply(429, 'rate_limit_error', 'Too many tokens per minute.'), 'rate_limited', true],
    ['500 api_error', errorReply(500, 'api_error', 'Something broke on our side.'), 'server_error', true],
    ['502 from a proxy with an HTML body', { kind: 'raw', status: 502, body: '<html><body>Bad gateway</body></html>' }, 'server_error', true],
    ['529 overloaded_error', errorReply(529, 'overloaded_error', 'Overloaded'), 'overloaded', true],
  ];

  it.each(cases)('%s', async (_name, reply, classification, retryable) => {
    server.reply(reply);

    const fault = await faultOf(provider.send(request, sendOptions()));

    expect(fault.classification).toBe(classification);
    expect(fault.retryable).toBe(retryable);
    expect(fault.details.httpStatus).toBe(reply.kind === 'json' || reply.kind === 'raw' ? reply.status : undefined);
    expect(fault.details.providerRequestId).toBe('req_fake_0001');
    expect(server.requests).toHaveLength(1);
  });

  it('passes retry-after (seconds) to the retry policy as retryAfterMs', async () => {
    server.reply(errorReply(429, 'rate_limit_error', 'Slow down.', { headers: { 'retry-after': '7' } }));

    const fault = await faultOf(provider.send(request, sendOptions()));

    expect(fault.classification).toBe('rate_limited');
    expect(fault.details.retryAfterMs).toBe(7_000);
  });

  it('prefers retry-after-ms, the precise one, when both headers are present', async () => {
    server.reply(errorReply(529, 'overloaded_error', 'Overloaded', { headers: { 'retry-after-ms': '1250.4', 'retry-after': '2' } }));

    const fault = await faultOf(provider.send(request, sendOptions()));

    expect(fault.classification).toBe('overloaded');
    expect(fault.details.retryAfterMs).toBe(1_251);
  });
});

describe('AnthropicProvider makes exactly one HTTP request per attempt, because every retry must be the runtime’s and recorded (BR-CAP-PFM-LLM-002-05, ATS-PFM-LLM-002-14)', () => {
  let server: MessagesApiServer;
  let provider: AnthropicProvider;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
    provider = new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL });
  });

  afterEach(async () => {
    await server.close();
  });

  it.each<[string, ScriptedReply]>([
    ['529', errorReply(529, 'overloaded_error', 'Overloaded')],
    ['500', errorReply(500, 'api_error', 'Internal')],
    ['429 with retry-after: 0', errorReply(429, 'rate_limit_error', 'Slow down.', { headers: { 'retry-after': '0' } })],
    ['a reset socket', { kind: 'reset' }],
  ])('sends one request on %s, though the SDK would retry it by default', async (_name, failure) => {
    // The success behind the failure would be taken by a hidden SDK retry; it must stay unused.
    server.reply(failure, messageReply({}));

    await faultOf(provider.send(request, sendOptions()));

    expect(server.requests).toHaveLength(1);
  });

  it('asks the SDK not to retry even when the server says x-should-retry: true', async () => {
    server.reply(errorReply(529, 'overloaded_error', 'Overloaded', { headers: { 'x-should-retry': 'true' } }), messageReply({}));

    const fault = await faultOf(provider.send(request, sendOptions()));

    expect(fault.classification).toBe('overloaded');
    expect(server.requests).toHaveLength(1);
  });
});

describe('AnthropicProvider connection, timeout and cancellation faults (BR-CAP-PFM-LLM-002-05, ATS-PFM-LLM-002-05)', () => {
  let server: MessagesApiServer;
  let provider: AnthropicProvider;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
    provider = new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL });
  });

  afterEach(async () => {
    // Also destroys the stalled exchanges, so no socket keeps jest alive.
    await server.close();
  });

  it('times out a stalled server with the attempt’s own timeout and records that it ran out of time', async () => {
    server.reply({ kind: 'stall' });

    const fault = await faultOf(provider.send(request, sendOptions({ timeoutMs: SHORT_ATTEMPT_TIMEOUT_MS })));

    expect(fault.classification).toBe('timeout');
    expect(fault.details.timedOut).toBe(true);
    expect(fault.retryable).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it('times out a body that stalls after the headers, because the timeout bounds the whole exchange', async () => {
    server.reply({ kind: 'stall-body' });

    const fault = await faultOf(provider.send(request, sendOptions({ timeoutMs: SHORT_ATTEMPT_TIMEOUT_MS })));

    expect(fault.classification).toBe('timeout');
    expect(fault.details.timedOut).toBe(true);
    expect(server.requests).toHaveLength(1);
  });

  it('classifies a reset socket as a connection fault, which is retried', async () => {
    server.reply({ kind: 'reset' });

    const fault = await faultOf(provider.send(request, sendOptions()));

    expect(fault.classification).toBe('connection');
    expect(fault.retryable).toBe(true);
    expect(fault.details.timedOut).toBeUndefined();
  });

  it('classifies a refused connection as a connection fault', async () => {
    const refusing = new AnthropicProvider({ apiKey: API_KEY, baseURL: await closedPortBaseURL() });

    const fault = await faultOf(refusing.send(request, sendOptions()));

    expect(fault.classification).toBe('connection');
    expect(fault.message).toContain('ECONNREFUSED');
  });

  it('ends an attempt the caller cancels as cancelled, which is never retried', async () => {
    server.reply({ kind: 'stall' });
    const caller = new AbortController();

    const sent = faultOf(provider.send(request, sendOptions({ signal: caller.signal })));
    await server.waitForRequests(1);
    caller.abort();
    const fault = await sent;

    expect(fault.classification).toBe('cancelled');
    expect(fault.retryable).toBe(false);
    expect(fault.details.timedOut).toBeUndefined();
  });

  it('sends nothing when the caller has already cancelled', async () => {
    const caller = new AbortController();
    caller.abort();

    const fault = await faultOf(provider.send(request, sendOptions({ signal: caller.signal })));

    expect(fault.classification).toBe('cancelled');
    expect(server.requests).toHaveLength(0);
  });

  it('reads a signal aborted with a TimeoutError (the conversation deadline) as a timeout, not a cancellation', async () => {
    server.reply({ kind: 'stall' });
    const deadline = new AbortController();

    const sent = faultOf(provider.send(request, sendOptions({ signal: deadline.signal })));
    await server.waitForRequests(1);
    deadline.abort(new DOMException('conversation deadline reached', 'TimeoutError'));
    const fault = await sent;

    expect(fault.classification).toBe('timeout');
    expect(fault.details.timedOut).toBe(true);
  });

  it('treats an allowance longer than a Node timer can hold as long, not as already over', async () => {
    server.reply(messageReply({}));

    const response = await provider.send(request, sendOptions({ timeoutMs: Number.MAX_SAFE_INTEGER }));

    expect(response.stopReason).toBe('end_turn');
  });

  it('sends nothing when no time is left for the attempt', async () => {
    const fault = await faultOf(provider.send(request, sendOptions({ timeoutMs: 0 })));

    expect(fault.classification).toBe('timeout');
    expect(fault.details.timedOut).toBe(true);
    expect(server.requests).toHaveLength(0);
  });
});

describe('AnthropicProvider never lets the API key out (docs/rules.md rule 12)', () => {
  let server: MessagesApiServer;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
  });

  afterEach(async () => {
    await server.close();
  });

  it('keeps the key out of fault messages, details and log lines, even when the server echoes it back', async () => {
    const lines: string[] = [];
    const provider = new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL, logger: recordingLogger(lines) });
    server.reply(
      errorReply(401, 'authentication_error', `invalid x-api-key: ${API_KEY}`),
      errorReply(400, 'invalid_request_error', `bad request from ${API_KEY.slice(0, 12)}… full ${API_KEY}`),
      { kind: 'reset' },
      { kind: 'stall' },
    );

    const faults = [
      await faultOf(provider.send(request, sendOptions())),
      await faultOf(provider.send(request, sendOptions())),
      await faultOf(provider.send(request, sendOptions())),
      await faultOf(provider.send(request, sendOptions({ timeoutMs: SHORT_ATTEMPT_TIMEOUT_MS }))),
    ];

    // The key really was sent, so its absence below is not an accident of a missing header.
    expect(JSON.stringify(server.requests[0].headers)).toContain(API_KEY);
    expect(faults.map((fault) => fault.classification)).toEqual(['unauthorized', 'malformed_request', 'connection', 'timeout']);
    for (const fault of faults) {
      expect(fault.message).not.toContain(API_KEY);
      expect(String(fault.stack)).not.toContain(API_KEY);
      expect(JSON.stringify({ ...fault, message: fault.message })).not.toContain(API_KEY);
      expect(fault).not.toHaveProperty('cause');
    }
    expect(faults[0].message).toContain('[redacted]');
    for (const line of lines) expect(line).not.toContain(API_KEY);
  });

  it('does not name the key when it refuses to start without one', () => {
    expect(() => new AnthropicProvider({ apiKey: '  ', baseURL: server.baseURL })).toThrow(/API key is required/);
  });
});

describe('parseRetryAfterMs reads the server’s requested wait (docs/rules.md)', () => {
  const headers = (values: Record<string, string>) => ({ get: (name: string) => values[name] ?? null });

  it('reads retry-after as delta-seconds, fractions rounded up to whole milliseconds', () => {
    expect(parseRetryAfterMs(headers({ 'retry-after': '3' }))).toBe(3_000);
    expect(parseRetryAfterMs(headers({ 'retry-after': '0.25' }))).toBe(250);
  });

  it('reads retry-after as an HTTP date against the response’s own date header', () => {
    const values = { 'retry-after': 'Wed, 21 Oct 2026 07:28:30 GMT', date: 'Wed, 21 Oct 2026 07:28:00 GMT' };
    expect(parseRetryAfterMs(headers(values))).toBe(30_000);
  });

  it('reads an HTTP date against the injected clock when the response has no date header', () => {
    const nowMs = Date.parse('Wed, 21 Oct 2026 07:28:25 GMT');
    expect(parseRetryAfterMs(headers({ 'retry-after': 'Wed, 21 Oct 2026 07:28:30 GMT' }), () => nowMs)).toBe(5_000);
  });

  it('ignores waits that are absent, unreadable or in the past', () => {
    expect(parseRetryAfterMs(headers({}))).toBeUndefined();
    expect(parseRetryAfterMs(headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfterMs(headers({ 'retry-after-ms': '-5' }))).toBeUndefined();
    const past = { 'retry-after': 'Wed, 21 Oct 2026 07:00:00 GMT', date: 'Wed, 21 Oct 2026 07:28:00 GMT' };
    expect(parseRetryAfterMs(headers(past))).toBeUndefined();
  });
});
