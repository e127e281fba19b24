/**
 * The simulator's Anthropic: what upstream answers an admitted gateway call, as the HTTP side would
 * hand it to the accounting (`GatewayCallOutcome`), with no socket. Usage within the request's
 * bounds (docs/gateway.md, "How the hold is bounded"), or past them (an upstream that over-reports),
 * malformed usage (as the relay names it, or a count no usage can hold), error statuses, an `error` event mid-stream after usage was seen, a stream that ends before any
 * usage, the time bound running out before or after usage, and a caller that went away. A call whose
 * time bound ran out is sometimes held on by its relay past it (a stalled caller): by a little, by
 * most of RECOVERY_DEADLINE_MARGIN_MS (recovery must leave it to its relay), or past it (recovery may
 * settle it first, and its own settlement then finds it settled).
 */
import type { GatewayCallOutcome, MessagesBodyFacts } from '../gateway/gateway-call.port';
import type { FaultClass } from '../runtime/faults';
import type { Usage } from '../runtime/provider.port';
import {
  DEFAULT_WEB_FETCH_MAX_USES,
  DOCUMENT_ALLOWANCE_TOKENS,
  IMAGE_ALLOWANCE_TOKENS,
  REQUEST_ALLOWANCE_TOKENS,
  WEB_FETCH_CONTENT_ALLOWANCE_TOKENS,
  WEB_SEARCH_RESULT_ALLOWANCE_TOKENS,
} from '../gateway/worst-case-hold';
import { RECOVERY_DEADLINE_MARGIN_MS } from '../invocations/invocation-ownership';
import type { GatewayCallPlan } from './gateway-scenario';
import { Prng } from './prng';

/** Error statuses upstream answers with, and their fault class (docs/gateway.md, "Relaying"). */
const ERROR_STATUSES: readonly { readonly status: number; readonly fault: FaultClass }[] = [
  { status: 429, fault: 'rate_limited' },
  { status: 500, fault: 'server_error' },
  { status: 529, fault: 'overloaded' },
];
/** Counts no usage report can hold: past 2^53, negative, fractional. */
const MALFORMED_COUNTS: readonly number[] = [1e20, 2 ** 53 + 2, -100_000, 9.5];
/** Fields the relay names when it finds one malformed. */
const MALFORMED_FIELDS: readonly string[] = ['output_tokens', 'input_tokens', 'server_tool_use.web_search_requests'];

/** The fault of an `error` event mid-stream. */
const MID_STREAM_FAULTS: readonly FaultClass[] = ['overloaded', 'server_error'];

/**
 * Searches upstream may make: each tool's `max_uses`, or none where the tool sets no bound (the
 * card's default may be 0).
 */
function searchesWithin(facts: MessagesBodyFacts): number {
  return facts.webSearchMaxUses.reduce<number>((sum, uses) => sum + (uses ?? 0), 0);
}

/** Fetches upstream may make, taken from the request's web-fetch tools in order, and the tokens they read at most. */
function fetchesWithin(facts: MessagesBodyFacts, fetches: number): { readonly fetches: number; readonly contentTokens: number } {
  let left = fetches;
  let contentTokens = 0;
  for (const tool of facts.webFetches) {
    const taken = Math.min(left, tool.maxUses ?? DEFAULT_WEB_FETCH_MAX_USES);
    contentTokens += taken * (tool.maxContentTokens ?? WEB_FETCH_CONTENT_ALLOWANCE_TOKENS);
    left -= taken;
  }
  return { fetches: fetches - left, contentTokens };
}

/** Input tokens the request could make the model read with `searches` searches and `fetches` fetches, as docs/gateway.md bounds them. */
function inputWithin(facts: MessagesBodyFacts, searches: number, fetches = 0): number {
  const fetched = fetchesWithin(facts, fetches);
  const perStep =
    facts.bodyBytes +
    REQUEST_ALLOWANCE_TOKENS +
    facts.imageBlocks * IMAGE_ALLOWANCE_TOKENS +
    facts.documentBlocks * DOCUMENT_ALLOWANCE_TOKENS +
    searches * WEB_SEARCH_RESULT_ALLOWANCE_TOKENS +
    fetched.contentTokens;
  return perStep * (1 + searches + fetched.fetches);
}

/** A usage report of `input` tokens split over the four input kinds, `output` tokens and `searches`. */
function report(prng: Prng, input: number, output: number, searches: number, facts: MessagesBodyFacts): Usage {
  const cacheRead = prng.chance(30) ? prng.int(0, input) : 0;
  const cacheWrite = prng.chance(30) ? prng.int(0, input - cacheRead) : 0;
  const cacheWrite1h = prng.chance(20) ? prng.int(0, input - cacheRead - cacheWrite) : 0;
  return {
    inputTokens: input - cacheRead - cacheWrite - cacheWrite1h,
    outputTokens: output,
    cacheWriteTokens: cacheWrite,
    cacheWrite1hTokens: cacheWrite1h,
    cacheReadTokens: cacheRead,
    webSearchRequests: searches,
    // Anthropic reports the mode it served, asked for or not; the hold covers every one.
    ...(facts.speed === 'fast' || prng.chance(5) ? { speed: 'fast' } : {}),
    ...(facts.inferenceGeo !== undefined || prng.chance(5) ? { inferenceGeo: prng.pick(['us', 'eu']) } : {}),
  };
}

/** Usage within the request's bounds: some share of the input bound, of max_tokens, of the searches and of the fetches. */
function usageWithin(prng: Prng, facts: MessagesBodyFacts): Usage {
  const searches = prng.int(0, searchesWithin(facts));
  // Drawn only for a request with a web-fetch tool, so the draws of every other call stay as they were.
  const fetches = facts.webFetches.length === 0 ? 0 : prng.int(0, fetchesWithin(facts, Number.MAX_SAFE_INTEGER).fetches);
  const bound = inputWithin(facts, searches, fetches);
  const input = prng.chance(10) ? bound : prng.int(1, Math.max(1, Math.floor(bound / 2)));
  const output = prng.chance(10) ? facts.maxTokens : prng.int(0, facts.maxTokens);
  return report(prng, input, output, searches, facts);
}

/** How long the relay holds a call past its time bound, in virtual ms, from the call's own stream (so nothing else is drawn differently). */
function stallMs(plan: GatewayCallPlan): number {
  const prng = new Prng(plan.usageSeed, `stall-${plan.tag}`);
  if (prng.chance(50)) return 0;
  return prng.pick([1_000, RECOVERY_DEADLINE_MARGIN_MS / 2, RECOVERY_DEADLINE_MARGIN_MS - 1_000, RECOVERY_DEADLINE_MARGIN_MS + 5_000]);
}

/** What upstream answers the call: its outcome after `plan.latencyMs` (or the call's time bound, and its stall past it). */
export function upstreamOutcome(plan: GatewayCallPlan, startedAtMs: number, attemptTimeoutMs: number): GatewayCallOutcome {
  const prng = new Prng(plan.usageSeed, `upstream-${plan.tag}`);
  const facts = plan.facts;
  const base = { startedAtMs, durationMs: Math.min(plan.latencyMs, attemptTimeoutMs), providerRequestId: `req_sim_${plan.tag}`, responseModel: facts.model, timedOut: false, callerDisconnected: false };
  switch (plan.upstream) {
    case 'ok':
    case 'crash-mid-call':
      return { ...base, classification: 'ok', httpStatus: 200, usage: usageWithin(prng, facts), stopReason: 'end_turn' };
    case 'caller-disconnect':
      return { ...base, classification: 'ok', httpStatus: 200, usage: usageWithin(prng, facts), stopReason: 'end_turn', callerDisconnected: true };
    case 'over-report': {
      // More than the request could produce: past max_tokens and past the input bound.
      const input = inputWithin(facts, 0) * 2 + prng.int(1, 100_000);
      return { ...base, classification: 'ok', httpStatus: 200, usage: report(prng, input, facts.maxTokens * 2 + prng.int(1, 50_000), 0, facts), stopReason: 'end_turn' };
    }
    case 'malformed-usage':
      // As the relay hands it on (the field named, no usage), or a count that reached settlement as is.
      return prng.chance(50)
        ? { ...base, classification: 'ok', httpStatus: 200, malformedUsage: prng.pick(MALFORMED_FIELDS), stopReason: 'end_turn' }
        : { ...base, classification: 'ok', httpStatus: 200, usage: { ...usageWithin(prng, facts), outputTokens: prng.pick(MALFORMED_COUNTS) }, stopReason: 'end_turn' };
    case 'error-status': {
      const { status, fault } = prng.pick(ERROR_STATUSES);
      return { ...base, classification: fault, httpStatus: status };
    }
    case 'error-mid-stream': {
      // message_start's usage was seen, then an `error` event: priced on the usage seen.
      const seen = usageWithin(prng, facts);
      return { ...base, classification: prng.pick(MID_STREAM_FAULTS), httpStatus: 200, usage: { ...seen, outputTokens: Math.min(seen.outputTokens, prng.int(0, 64)) } };
    }
    case 'no-usage':
      // The connection broke before message_start: no usage was ever reported.
      return { ...base, classification: 'connection' };
    case 'timeout':
      return { ...base, durationMs: attemptTimeoutMs + stallMs(plan), classification: 'timeout', timedOut: true };
    case 'timeout-after-usage':
      return { ...base, durationMs: attemptTimeoutMs + stallMs(plan), classification: 'timeout', timedOut: true, httpStatus: 200, usage: usageWithin(prng, facts) };
  }
}
