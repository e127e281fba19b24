/**
 * What a gateway call's one upstream attempt is recorded as (docs/gateway.md "Settlement"), read from
 * whatever the upstream answered so that settlement never throws on an answer: usage that cannot be
 * priced is unknown usage (the call is then charged its hold), and a text the attempt record would
 * refuse (an over-long model or request id) is left out rather than fail the settlement.
 */
import type { Publication } from '../catalog/operation.events';
import { MAX_MODEL_NAME_CHARS } from '../catalog/publication.validation';
import { MAX_PROVIDER_REQUEST_ID_CHARS, MAX_SERVICE_TIER_CHARS, MAX_USAGE_MODE_CHARS } from '../invocations/invocation.validation';
import { API_USAGE_FIELD_OF_KIND, MAX_REPORTED_USAGE_COUNT } from '../providers/anthropic/anthropic-response.mapper';
import { priceAttempt, priceInMillionths, ratesFor } from '../runtime/pricing';
import { USAGE_KINDS, type Usage, type UsageKind } from '../runtime/provider.port';
import { NO_USAGE } from '../runtime/usage';
import type { AttemptRecord } from '../runtime/conversation.types';
import { oneAttemptEnd, type ConversationEnd } from '../invocations/invocation-lifecycle';
import type { GatewayCallOutcome } from './gateway-call.port';

/** The HTTP statuses an attempt record keeps (an upstream may answer any three digits). */
const RECORDED_STATUSES = { min: 100, max: 599 } as const;

/** The attempt's facts as the invocation records them. */
export interface GatewayAttemptFacts {
  /** Absent when upstream reported none, or reported it malformed. */
  readonly usage?: Usage;
  /** The usage field upstream reported malformed, or whose price left the exact-integer range. */
  readonly malformedUsage?: string;
  /** Integer credits: the usage's price at the call's rate card version, 0 when the usage is unknown. */
  readonly priceCredits: number;
  /** Upstream's model when it named one the record can keep, else the model the call was held for. */
  readonly model: string;
  readonly providerRequestId?: string;
  readonly httpStatus?: number;
}

/** The attempt of `outcome`, priced at the call's publication: never throws on what upstream sent. */
export function gatewayAttemptFacts(outcome: GatewayCallOutcome, publication: Publication): GatewayAttemptFacts {
  const kept = {
    model: keptText(outcome.responseModel, MAX_MODEL_NAME_CHARS) ?? publication.routing.model,
    ...optional('providerRequestId', keptText(outcome.providerRequestId, MAX_PROVIDER_REQUEST_ID_CHARS)),
    ...optional('httpStatus', recordedStatus(outcome.httpStatus)),
  };
  const usage = outcome.usage === undefined ? undefined : { ...outcome.usage };
  const malformed = outcome.malformedUsage ?? (usage === undefined ? undefined : malformedFieldOf(usage));
  if (malformed !== undefined) return { ...kept, malformedUsage: malformed, priceCredits: 0 };
  if (usage === undefined) return { ...kept, priceCredits: 0 };
  try {
    return { ...kept, usage, priceCredits: priceAttempt(usage, publication.prices) };
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    // Each count is safe, but their price is not: the usage is as unknown as a malformed count.
    return { ...kept, malformedUsage: API_USAGE_FIELD_OF_KIND[dearestKind(usage, publication)], priceCredits: 0 };
  }
}

/**
 * The call's one attempt as the invocation records it, and how the call ended. An error answer is
 * failed and charged what it reported (Anthropic bills no failed request otherwise); anything else
 * with no usage, or with malformed usage, completed unmeasured and settles at its hold (transitions
 * 7 and 9).
 */
export function gatewayAttemptEnd(outcome: GatewayCallOutcome, publication: Publication): { readonly attempt: AttemptRecord; readonly end: ConversationEnd } {
  const { usage, malformedUsage, priceCredits, model, providerRequestId, httpStatus } = gatewayAttemptFacts(outcome, publication);
  const fault = outcome.classification === 'ok' || malformedUsage !== undefined ? undefined : outcome.classification;
  const failed = fault !== undefined && (usage !== undefined || (httpStatus !== undefined && httpStatus >= 400));
  const attempt: AttemptRecord = {
    turn: 1,
    retry: 0,
    startedAtMs: outcome.startedAtMs,
    durationMs: outcome.durationMs,
    waitBeforeMs: 0,
    classification: outcome.classification,
    timedOut: outcome.timedOut,
    ...optional('httpStatus', httpStatus),
    ...optional('providerRequestId', providerRequestId),
    model,
    ...optional('usage', usage),
    ...optional('malformedUsage', malformedUsage),
    priceCredits,
  };
  return { attempt, end: oneAttemptEnd(priceCredits, usage, failed ? fault : undefined) };
}

/**
 * The first field of `usage` that is malformed: a count that is not a non-negative safe integer or is
 * above MAX_REPORTED_USAGE_COUNT (as `readUsageReport` judges the upstream's own fields), a mode name
 * too long for the attempt record.
 */
function malformedFieldOf(usage: Usage): string | undefined {
  const kind = USAGE_KINDS.find((count) => !Number.isSafeInteger(usage[count]) || usage[count] < 0 || usage[count] > MAX_REPORTED_USAGE_COUNT);
  if (kind !== undefined) return API_USAGE_FIELD_OF_KIND[kind];
  if (!fits(usage.serviceTier, MAX_SERVICE_TIER_CHARS)) return 'service_tier';
  if (!fits(usage.speed, MAX_USAGE_MODE_CHARS)) return 'speed';
  if (!fits(usage.inferenceGeo, MAX_USAGE_MODE_CHARS)) return 'inference_geo';
  return undefined;
}

/** The kind whose count alone prices highest: what drove the price out of range. */
function dearestKind(usage: Usage, publication: Publication): UsageKind {
  const rates = ratesFor(usage, publication.prices);
  let dearest: { kind: UsageKind; millionths: bigint } = { kind: USAGE_KINDS[0]!, millionths: -1n };
  for (const kind of USAGE_KINDS) {
    const millionths = priceInMillionths({ ...NO_USAGE, [kind]: usage[kind] }, rates);
    if (millionths > dearest.millionths) dearest = { kind, millionths };
  }
  return dearest.kind;
}

function fits(text: string | undefined, maxChars: number): boolean {
  return text === undefined || (text.trim() !== '' && text.length <= maxChars);
}

function keptText(text: string | undefined, maxChars: number): string | undefined {
  return text !== undefined && fits(text, maxChars) ? text : undefined;
}

function recordedStatus(status: number | undefined): number | undefined {
  return status !== undefined && Number.isInteger(status) && status >= RECORDED_STATUSES.min && status <= RECORDED_STATUSES.max ? status : undefined;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
