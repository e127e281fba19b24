/**
 * A fuzzing upstream (docs/gateway.md "Settlement"): the real service's `/anthropic` route forwards
 * calls to a local Messages API that answers each with a seeded random answer, streamed or not: usage
 * with odd values (1e20, negative, fractional, text, null, huge, past the exact-integer range in
 * price, the wrong types), a missing `message_delta` or `message_stop`, `error` events, a cut
 * connection, error statuses, bodies that are not JSON. For every call it fails on a status the
 * upstream did not send (a 5xx of the gateway's own), on a call left unsettled, and on a charge below
 * the upstream's final usage price without an overrun on record; malformed usage must be charged the
 * hold. Seeded (FUZZ_SEED) and bounded by a count of calls, not a clock.
 */
import { GATEWAY_OPERATION_ID } from '../../src/gateway/gateway-calls.service';
import { MAX_REPORTED_USAGE_COUNT } from '../../src/providers/anthropic/anthropic-response.mapper';
import { independentGatewayPrice } from '../../src/simulation/gateway-audit';
import { Prng } from '../../src/simulation/prng';
import type { GatewayPrices } from '../../src/runtime/conversation.types';
import { bearer, TOKENS } from '../http/support/http-ledger';
import type { ScriptedReply, SseStep } from '../support/messages-api-server';
import { GATEWAY_PRICES, startGatewayService, type GatewayService } from '../gateway/support/gateway-service';

const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 31);
/** Calls made in all: each one is a few milliseconds through the real service. */
const FUZZ_CALLS = 120;
/** A model whose web searches are priced, so a search count can drive a price out of range. */
const FUZZ_MODEL = 'claude-fuzzing-5';
const FUZZ_PRICES: GatewayPrices = { ...GATEWAY_PRICES, webSearchPerThousand: 10_000_000 };

/** Counts as an upstream could write them: fine, zero, large, and every kind of wrong. */
const ODD_COUNTS: readonly unknown[] = [0, 7, 1_234, 150_000, 2 ** 53 - 1, 9e15, 1e20, 1e300, -1, -100_000, 9.5, '9000', null, true, [], {}];
const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const;
const ERROR_STATUSES = [400, 429, 500, 529] as const;
/**
 * Polls of the invocation's view before a call counts as left unsettled (10 ms apart: the settlement
 * follows the answer's last byte by milliseconds, so this bound only turns a hang into a finding).
 */
const MAX_SETTLE_POLLS = 300;
const SETTLE_POLL_MS = 10;

/** The upstream's answer to one call, and what it reported as its final usage (undefined: none). */
interface FuzzAnswer {
  readonly reply: ScriptedReply;
  /** The status the caller must get: the upstream's, relayed. */
  readonly status: number;
  readonly finalUsage: unknown;
}

/** A usage object: each field a fair count most of the time, an odd one sometimes, or left out. */
function drawUsage(prng: Prng): Record<string, unknown> {
  const usage: Record<string, unknown> = {};
  for (const field of USAGE_FIELDS) {
    if (prng.chance(15)) continue;
    usage[field] = prng.chance(75) ? prng.int(0, 2_000) : prng.pick(ODD_COUNTS);
  }
  if (prng.chance(20)) usage.server_tool_use = prng.chance(80) ? { web_search_requests: prng.chance(60) ? prng.int(0, 5) : prng.pick(ODD_COUNTS) } : prng.pick(ODD_COUNTS);
  if (prng.chance(10)) usage.service_tier = prng.pick(['standard', 'priority', 7, '']);
  return usage;
}

/** `usage` in the body: an object most of the time, sometimes absent, null or of the wrong type. */
function drawUsageValue(prng: Prng): unknown {
  if (prng.chance(85)) return drawUsage(prng);
  return prng.pick([undefined, null, 'lots', 42, []]);
}

function jsonAnswer(prng: Prng): FuzzAnswer {
  const usage = drawUsageValue(prng);
  const message = { id: 'msg_fuzz', type: 'message', role: 'assistant', model: FUZZ_MODEL, content: [{ type: 'text', text: 'fuzz' }], stop_reason: prng.pick(['end_turn', 'max_tokens', null, 'novel_reason']), stop_sequence: null };
  return { reply: { kind: 'json', status: 200, body: usage === undefined ? message : { ...message, usage } }, status: 200, finalUsage: usage };
}

function errorAnswer(prng: Prng): FuzzAnswer {
  const status = prng.pick(ERROR_STATUSES);
  const usage = prng.chance(20) ? drawUsageValue(prng) : undefined;
  const body = { type: 'error', error: { type: prng.pick(['overloaded_error', 'api_error', 'invalid_request_error', 'rate_limit_error']), message: 'fuzzed' } };
  if (prng.chance(10)) return { reply: { kind: 'raw', status, body: '<html>proxy error</html>' }, status, finalUsage: undefined };
  return { reply: { kind: 'json', status, body: usage === undefined ? body : { ...body, usage } }, status, finalUsage: usage };
}

/**
 * A stream: message_start with usage (or odd), text, then any of message_delta, an `error` event,
 * message_stop, a cut connection; its final usage merged as Anthropic's SDK and the gateway read it
 * (message_start's, with each non-null field of the last message_delta's over it).
 */
function streamAnswer(prng: Prng): FuzzAnswer {
  const startUsage = drawUsageValue(prng);
  const steps: SseStep[] = [
    { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_fuzz', type: 'message', role: 'assistant', model: FUZZ_MODEL, content: [], stop_reason: null, ...(startUsage === undefined ? {} : { usage: startUsage }) } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'fuzz' } } },
  ];
  let merged = isPlainObject(startUsage) ? { ...startUsage } : undefined;
  if (prng.chance(75)) {
    const deltaUsage = prng.chance(90) ? drawUsage(prng) : prng.pick(['x', null]);
    steps.push({ event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: deltaUsage } });
    if (isPlainObject(deltaUsage)) {
      merged = merged ?? {};
      for (const [key, value] of Object.entries(deltaUsage)) if (value !== null && value !== undefined) merged[key] = value;
    }
  }
  if (prng.chance(10)) steps.push({ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'fuzzed' } } });
  if (prng.chance(85)) steps.push({ event: 'message_stop', data: { type: 'message_stop' } });
  if (prng.chance(8)) steps.push({ end: 'reset' });
  return { reply: { kind: 'sse', steps }, status: 200, finalUsage: merged };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isCount = (value: unknown): boolean =>
  value === undefined || value === null || (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= MAX_REPORTED_USAGE_COUNT);
const countOf = (value: unknown): number => (typeof value === 'number' ? value : 0);

/**
 * The upstream's final usage judged here on its own: no usage, malformed (a count that is not a
 * non-negative safe integer or is above MAX_REPORTED_USAGE_COUNT, an object that is not one, a mode that is not text, or a price past the
 * exact-integer range), or its price at FUZZ_PRICES.
 */
function judge(finalUsage: unknown): { readonly kind: 'none' } | { readonly kind: 'malformed' } | { readonly kind: 'priced'; readonly credits: number } {
  if (finalUsage === undefined || finalUsage === null) return { kind: 'none' };
  if (!isPlainObject(finalUsage)) return { kind: 'malformed' };
  const tools = finalUsage.server_tool_use;
  if (tools !== undefined && tools !== null && !isPlainObject(tools)) return { kind: 'malformed' };
  const searches = isPlainObject(tools) ? tools.web_search_requests : undefined;
  if (!USAGE_FIELDS.every((field) => isCount(finalUsage[field])) || !isCount(searches)) return { kind: 'malformed' };
  const tier = finalUsage.service_tier;
  if (tier !== undefined && tier !== null && typeof tier !== 'string') return { kind: 'malformed' };
  const usage = {
    inputTokens: countOf(finalUsage.input_tokens),
    outputTokens: countOf(finalUsage.output_tokens),
    cacheWriteTokens: countOf(finalUsage.cache_creation_input_tokens),
    cacheWrite1hTokens: 0,
    cacheReadTokens: countOf(finalUsage.cache_read_input_tokens),
    webSearchRequests: countOf(searches),
  };
  const credits = independentGatewayPrice(usage, FUZZ_PRICES);
  return Number.isSafeInteger(credits) ? { kind: 'priced', credits } : { kind: 'malformed' };
}

describe('a fuzzing upstream: no answer makes the gateway fail, leave a call unsettled or charge less than the usage it reported (docs/gateway.md "Settlement")', () => {
  let service: GatewayService;

  beforeAll(async () => {
    service = await startGatewayService();
    await service.ledger
      .http()
      .put(`/v1/gateway/models/${FUZZ_MODEL}`)
      .set(bearer(TOKENS.system))
      .send({ prices: FUZZ_PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true })
      .expect(200);
  });
  afterAll(() => service.close());

  const settledOrUndefined = async (invocationId: string): Promise<Record<string, unknown> | undefined> => {
    for (let poll = 0; poll < MAX_SETTLE_POLLS; poll++) {
      const view = await service.ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.system));
      if (view.status === 200 && view.body.state === 'settled') return view.body as Record<string, unknown>;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    }
    return undefined;
  };

  it(`answers ${FUZZ_CALLS} seeded calls (seed ${FUZZ_SEED}) with the upstream's status, settles each, and charges each at least its final usage's price less an overrun on record, malformed usage at its hold`, async () => {
    const prng = new Prng(FUZZ_SEED, 'gateway-upstream-fuzz');
    const problems: string[] = [];
    const seen = new Set<string>();
    for (let call = 0; call < FUZZ_CALLS; call++) {
      const stream = prng.chance(50);
      const answer = prng.chance(15) ? errorAnswer(prng) : stream ? streamAnswer(prng) : jsonAnswer(prng);
      service.upstream.reply(answer.reply);
      const response = await fetch(`${service.client().baseURL}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': service.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: FUZZ_MODEL, max_tokens: prng.int(1, 4_096), stream, messages: [{ role: 'user', content: `fuzz ${call}` }] }),
      });
      await response.arrayBuffer().catch(() => undefined);
      if (response.status !== answer.status) problems.push(`call ${call}: answered ${response.status}, upstream sent ${answer.status}`);
      const invocationId = response.headers.get('llm-ledger-invocation-id');
      if (invocationId === null) {
        problems.push(`call ${call}: no invocation recorded`);
        continue;
      }
      const view = await settledOrUndefined(invocationId);
      if (view === undefined) {
        problems.push(`call ${call}: left unsettled (answer ${JSON.stringify(answer.reply).slice(0, 300)})`);
        continue;
      }
      const charge = view.charge as number;
      const overrun = (view.overrunCredits as number | undefined) ?? 0;
      const hold = view.estimate as number;
      const judged = judge(answer.finalUsage);
      seen.add(judged.kind);
      if (view.operationId !== GATEWAY_OPERATION_ID) problems.push(`call ${call}: recorded as ${String(view.operationId)}`);
      if (charge > hold) problems.push(`call ${call}: charged ${charge} of a ${hold}-credit hold`);
      if (judged.kind === 'malformed' && charge !== hold) problems.push(`call ${call}: malformed usage ${JSON.stringify(answer.finalUsage)} charged ${charge}, not its ${hold}-credit hold`);
      if (judged.kind === 'priced' && charge + overrun < judged.credits) {
        problems.push(`call ${call}: usage ${JSON.stringify(answer.finalUsage)} prices at ${judged.credits}; charged ${charge} with an overrun of ${overrun}`);
      }
    }
    expect(problems).toEqual([]);
    // The seed met every kind of final usage.
    expect([...seen].sort()).toEqual(['malformed', 'none', 'priced']);
  });
});
