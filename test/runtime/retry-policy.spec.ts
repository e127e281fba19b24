import {
  BASE_RETRY_WAIT_MS,
  DEFAULT_MAX_ATTEMPTS_PER_TURN,
  FAULT_CLASSES,
  MAX_BACKOFF_WAIT_MS,
  backoffWaitMs,
  classifyHttpFault,
  decideRetry,
  isRetryable,
  retryWaitMs,
  type FaultClass,
} from '../../src/runtime';

const never = (): number => 0;
const almostOne = (): number => 0.999_999;

describe('BR-CAP-PFM-LLM-002-05 transient faults retry and permanent ones do not (ATS-PFM-LLM-002-05)', () => {
  const table: [string, FaultClass, boolean][] = [
    ['a 408 is the provider timing out', classifyHttpFault({ status: 408 }), true],
    ['a plain 429 is load', classifyHttpFault({ status: 429, message: 'Number of request tokens has exceeded your per-minute rate limit' }), true],
    ['a 529 is the provider telling us it is overloaded', classifyHttpFault({ status: 529 }), true],
    ['an overloaded_error body is overload whatever the status', classifyHttpFault({ status: 500, errorType: 'overloaded_error' }), true],
    ['a 500 is a server fault', classifyHttpFault({ status: 500 }), true],
    ['a 502 is a server fault', classifyHttpFault({ status: 502 }), true],
    ['a 503 is a server fault', classifyHttpFault({ status: 503 }), true],
    ['a 504 is a server fault', classifyHttpFault({ status: 504 }), true],
    ['any other 5xx is a server fault', classifyHttpFault({ status: 507 }), true],
    ['a 409 is a conflict that may clear', classifyHttpFault({ status: 409 }), true],
    ['a 400, because the request itself is wrong', classifyHttpFault({ status: 400, message: 'messages: field required' }), false],
    ['a 404, because the request itself is wrong', classifyHttpFault({ status: 404 }), false],
    ['a 413, because the request itself is wrong', classifyHttpFault({ status: 413 }), false],
    ['a 422, because the request itself is wrong', classifyHttpFault({ status: 422 }), false],
    ['a 401, because our credentials are wrong', classifyHttpFault({ status: 401 }), false],
    ['a 403, because we are not allowed', classifyHttpFault({ status: 403, message: 'forbidden' }), false],
  ];

  it.each(table)('classifies %s, and retries it only if transient', (_label, classification, retried) => {
    expect(isRetryable(classification)).toBe(retried);
    const decision = decideRetry(classification, 1, DEFAULT_MAX_ATTEMPTS_PER_TURN, never);
    expect(decision.retry).toBe(retried);
  });

  it('retries a broken connection and an abort by the attempt timeout, which are transport trouble', () => {
    expect(decideRetry('connection', 1, 3, never).retry).toBe(true);
    expect(decideRetry('timeout', 1, 3, never).retry).toBe(true);
  });

  it('never retries a caller cancellation, because nobody wants the answer any more', () => {
    expect(decideRetry('cancelled', 1, 3, never)).toEqual({ retry: false, reason: 'permanent' });
  });

  it('covers the closed set of fault classes with no class left undecided', () => {
    const retried = FAULT_CLASSES.filter((fault) => isRetryable(fault));
    expect(retried.sort()).toEqual(['conflict', 'connection', 'overloaded', 'rate_limited', 'server_error', 'timeout']);
  });

  it('gives a turn three attempts by default, then stops retrying', () => {
    expect(DEFAULT_MAX_ATTEMPTS_PER_TURN).toBe(3);
    expect(decideRetry('overloaded', 2, DEFAULT_MAX_ATTEMPTS_PER_TURN, never).retry).toBe(true);
    expect(decideRetry('overloaded', 3, DEFAULT_MAX_ATTEMPTS_PER_TURN, never)).toEqual({ retry: false, reason: 'exhausted' });
  });
});

describe('BR-CAP-PFM-LLM-002-06 a rate limit that says the balance is depleted is credit exhaustion (ATS-PFM-LLM-002-06)', () => {
  const depleted: [string, Parameters<typeof classifyHttpFault>[0]][] = [
    ['Anthropic 429 "credit balance is too low"', { status: 429, errorType: 'rate_limit_error', message: 'Your credit balance is too low to access the Anthropic API.' }],
    ['Anthropic 400 billing_error', { status: 400, errorType: 'billing_error', message: 'billing problem' }],
    ['OpenAI 429 insufficient_quota', { status: 429, errorType: 'insufficient_quota', message: 'You exceeded your current quota' }],
    ['OpenRouter 402', { status: 402, message: 'Payment required' }],
    ['a 403 that says the balance is depleted', { status: 403, message: 'Account balance is depleted' }],
  ];

  it.each(depleted)('is classified as credit exhaustion, so a caller can branch without knowing the provider’s strings: %s', (_label, evidence) => {
    expect(classifyHttpFault(evidence)).toBe('credit_exhausted');
  });

  it('is not retried, because retrying it reads a purchase problem as load', () => {
    const classification = classifyHttpFault({ status: 429, message: 'Your credit balance is too low to access the Anthropic API.' });
    expect(decideRetry(classification, 1, 3, never)).toEqual({ retry: false, reason: 'permanent' });
  });
});

describe('BR-CAP-PFM-LLM-002-05 waits grow between attempts, with jitter, and honour retry-after', () => {
  it('doubles from 500 ms and adds less than a quarter of jitter, so a later wait is always longer', () => {
    expect(backoffWaitMs(1, never)).toBe(BASE_RETRY_WAIT_MS);
    expect(backoffWaitMs(2, never)).toBe(2 * BASE_RETRY_WAIT_MS);
    expect(backoffWaitMs(1, almostOne)).toBe(624);
    expect(backoffWaitMs(2, almostOne)).toBe(1_249);
    expect(backoffWaitMs(2, never)).toBeGreaterThan(backoffWaitMs(1, almostOne));
  });

  it('stops doubling at the cap, so a large attempt budget cannot produce absurd waits', () => {
    expect(backoffWaitMs(40, never)).toBe(MAX_BACKOFF_WAIT_MS);
  });

  it('waits as long as the provider asked when that is longer than the backoff, never shorter', () => {
    expect(retryWaitMs(1, never, 7_000)).toBe(7_000);
    expect(retryWaitMs(1, never, 100)).toBe(BASE_RETRY_WAIT_MS);
    expect(decideRetry('rate_limited', 1, 3, never, 2_500)).toEqual({ retry: true, waitMs: 2_500 });
  });

  it('keeps a misbehaving random source inside its bounds', () => {
    expect(backoffWaitMs(1, () => 5)).toBe(624);
    expect(backoffWaitMs(1, () => -1)).toBe(500);
  });
});
