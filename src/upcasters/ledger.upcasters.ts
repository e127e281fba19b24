/**
 * How events written before the rate version grew are read today (README.md "Prices: the rate version
 * and an attempt's price"). The log is never rewritten: each step below turns the data of one schema
 * version into the next, on read.
 *
 * Version 2 of the publication-carrying events (OperationPublished, and InvocationEstimated which
 * copies the publication) holds complete prices: `cacheWrite1hPerMTok` (absent before: the 5-minute
 * rate) and `webSearchPerThousand` (absent before: 0). Version 2 of the usage-carrying events
 * (AttemptRecorded, InvocationCompleted, InvocationFailed) counts 1-hour cache writes and web searches
 * apart; before them there were none (the adapter sent only 5-minute markers and no server tools), so
 * both are 0 and every old price recomputes to what it was.
 */
import { UpcasterRegistry, type Upcaster } from '../event-store/upcasting';
import type { RecordedEvent } from '../event-store/event-store.port';
import type { Prices } from '../runtime/conversation.types';
import { completePrices } from '../runtime/pricing';

type Json = Record<string, unknown>;

function withCompletePrices(publication: unknown): unknown {
  if (typeof publication !== 'object' || publication === null) return publication;
  const body = publication as Json;
  if (typeof body.prices !== 'object' || body.prices === null) return publication;
  return { ...body, prices: completePrices(body.prices as Prices) };
}

function withUsageKinds(usage: unknown): unknown {
  if (typeof usage !== 'object' || usage === null) return usage;
  return { cacheWrite1hTokens: 0, webSearchRequests: 0, ...(usage as Json) };
}

const publishedV1: Upcaster = (data) => withCompletePrices(data);
const estimatedV1: Upcaster = (data) => {
  const body = data as Json;
  return body.publication === null || body.publication === undefined ? data : { ...body, publication: withCompletePrices(body.publication) };
};
const attemptV1: Upcaster = (data) => {
  const body = data as Json;
  return body.usage === undefined ? data : { ...body, usage: withUsageKinds(body.usage) };
};
const figuresV1: Upcaster = (data) => {
  const body = data as Json;
  return { ...body, usageTotals: withUsageKinds(body.usageTotals) };
};

/** Every upcaster of the ledger's events. Writers stamp `currentVersion(type)` on what they append. */
export const LEDGER_UPCASTERS: UpcasterRegistry = new UpcasterRegistry()
  .register('OperationPublished', 1, publishedV1)
  .register('InvocationEstimated', 1, estimatedV1)
  .register('AttemptRecorded', 1, attemptV1)
  .register('InvocationCompleted', 1, figuresV1)
  .register('InvocationFailed', 1, figuresV1);

/** The event as its current version (the same object when nothing applies). */
export function currentLedgerEvent<E extends RecordedEvent>(event: E): E {
  return LEDGER_UPCASTERS.upcast(event) as E;
}
