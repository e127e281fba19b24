import { AnthropicProvider } from '../../../src/providers/anthropic';
import {
  BASE_RETRY_WAIT_MS,
  executeWithRetry,
  VirtualClock,
  type AttemptRecord,
  type Prices,
  type ProviderRequest,
} from '../../../src/runtime';
import { errorReply, MessagesApiServer, messageReply } from '../../support/messages-api-server';

const API_KEY = 'sk-ant-test-retry-after-key';
/** The attempt timer runs on the virtual clock, which only moves when the test moves it. */
const ATTEMPT_TIMEOUT_MS = 60_000;
const CONVERSATION_TIME_MS = 600_000;
/** Longer than any backoff for a first retry, so only the header can explain a wait this long. */
const RETRY_AFTER_SECONDS = 3;
const RETRY_AFTER_MS = RETRY_AFTER_SECONDS * 1000;

const prices: Prices = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheReadPerMTok: 300_000 };

const request: ProviderRequest = {
  model: 'claude-published-model',
  maxOutputTokens: 256,
  system: [],
  tools: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'What is 6*7?' }] }],
};

/** Resolves when `records` has reached `count` entries; the report callback calls `check`. */
function reportedCount(records: AttemptRecord[], count: number): { promise: Promise<void>; check: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, check: () => records.length >= count && resolve() };
}

describe('retry-after from the Anthropic API is honoured by the runtime’s retry policy (BR-CAP-PFM-LLM-002-05, ATS-PFM-LLM-002-14)', () => {
  let server: MessagesApiServer;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
  });

  afterEach(async () => {
    await server.close();
  });

  it('waits the full retry-after of a 429 before the next attempt, never less, and records that wait', async () => {
    // Real HTTP happens here, so the virtual clock must not jump on its own while a request is out.
    const clock = new VirtualClock({ autoAdvance: false });
    const provider = new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL });
    server.reply(
      errorReply(429, 'rate_limit_error', 'Too many requests this minute.', { headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } }),
      messageReply({ usage: { input_tokens: 100, output_tokens: 10, cache_creation_input_tokens: null, cache_read_input_tokens: null } }),
    );
    const records: AttemptRecord[] = [];
    const firstReported = reportedCount(records, 1);

    const turn = executeWithRetry({
      provider,
      request,
      clock,
      turn: 1,
      deadlineMs: clock.now() + CONVERSATION_TIME_MS,
      attemptTimeoutMs: ATTEMPT_TIMEOUT_MS,
      maxAttemptsPerTurn: 3,
      prices,
      random: () => 0,
      report: (record) => {
        records.push(record);
        firstReported.check();
      },
    });

    await firstReported.promise;
    expect(records[0]).toMatchObject({ classification: 'rate_limited', httpStatus: 429, providerRequestId: 'req_fake_0001' });
    expect(RETRY_AFTER_MS).toBeGreaterThan(BASE_RETRY_WAIT_MS * 2);

    // One millisecond short of the server's wait: the retry is still waiting, nothing more was sent.
    await clock.advance(RETRY_AFTER_MS - 1);
    expect(clock.pendingTimers).toBe(1);
    expect(server.requests).toHaveLength(1);

    await clock.advance(1);
    const outcome = await turn;

    expect(outcome.ok).toBe(true);
    expect(server.requests).toHaveLength(2);
    expect(records.map((r) => [r.retry, r.classification, r.waitBeforeMs, r.startedAtMs])).toEqual([
      [0, 'rate_limited', 0, 0],
      [1, 'ok', RETRY_AFTER_MS, RETRY_AFTER_MS],
    ]);
  });

  it('does not retry a 429 that says the account’s spend limit is reached, whatever its retry-after', async () => {
    const clock = new VirtualClock({ autoAdvance: false });
    const provider = new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL });
    server.reply(
      errorReply(429, 'rate_limit_error', 'Monthly spend limit reached.', {
        headers: { 'retry-after': '1' },
        details: { error_code: 'enforced_spend_limit_reached' },
      }),
      messageReply({}),
    );
    const records: AttemptRecord[] = [];

    const outcome = await executeWithRetry({
      provider,
      request,
      clock,
      turn: 1,
      deadlineMs: clock.now() + CONVERSATION_TIME_MS,
      attemptTimeoutMs: ATTEMPT_TIMEOUT_MS,
      maxAttemptsPerTurn: 3,
      prices,
      random: () => 0,
      report: (record) => void records.push(record),
    });

    expect(outcome).toEqual({ ok: false, ending: 'failed', fault: 'credit_exhausted' });
    expect(records).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
  });
});
