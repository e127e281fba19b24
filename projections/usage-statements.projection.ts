import type { Projection } from '../src/projection-runner';
import type { RecordedEvent } from '../src/event-store/event-store.port';
import { addUsageSaturating, NO_USAGE } from '../src/runtime/usage';
import type { Outcome, Usage } from '../src/runtime';
import { currentLedgerEvent } from '../src/upcasters/ledger.upcasters';
import type { InvocationRecordedEvent } from './invocations.projection';
import { streamId } from './stream-names';
import { GATEWAY_BATCH_OPERATION_ID, GATEWAY_BATCH_STREAM_PREFIX, type BatchResultType, type GatewayBatchEvent } from '../src/gateway/batches/gateway-batch';

export const USAGE_STATEMENTS_PROJECTION = 'usage-statements';
/** One document per organization, UTC day, operation, model and gateway key: an invoice line's makings. */
export const USAGE_DAY_COLLECTION = 'day';
/** Invocations not yet settled or refused: what they will bring to their day's line. */
const OPEN_COLLECTION = 'open';

/** The outcome counted for a settlement that has none (the sweep or an exception closed it first). */
export const NO_OUTCOME = 'unfinished';
export type StatementOutcome = Outcome | typeof NO_OUTCOME;

/**
 * What an organization used on one UTC day under one operation and one model (README.md "Invoicing").
 * Charges are counted on the day of their settlement, refusals on the day of the refusal; tokens are
 * the settled invocations' totals, by kind.
 */
export interface UsageDayView {
  readonly organizationId: string;
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly operationId: string;
  /** The model its publication routed to; empty for a never-published operation. */
  readonly model: string;
  /** The gateway key of a gateway call's line (docs/gateway.md); absent on operations' lines. */
  readonly keyId?: string;
  /** That key's name as its latest call on the line named it. */
  readonly keyName?: string;
  /** The team of the calls' key when they were made (docs/gateway.md "Teams"); absent: none. */
  readonly teamId?: string;
  /** The calls' `metadata.user_id` (docs/gateway.md "Who spent it"); absent when they sent none. */
  readonly userId?: string;
  /** The calls' `x-ledger-tags`, as each call sent them; absent when they sent none. */
  readonly tags?: readonly string[];
  /** Integer credits charged by the settlements of the day. */
  readonly credits: number;
  /** Settled invocations, and how many ended with each outcome. */
  readonly settled: number;
  readonly outcomes: Readonly<Partial<Record<StatementOutcome, number>>>;
  /** Refused invocations, and how many for each reason. */
  readonly refused: number;
  readonly refusals: Readonly<Record<string, number>>;
  /** Each kind at most Number.MAX_SAFE_INTEGER: a sum past it is that bound (usageSaturated). */
  readonly tokens: Usage;
  /**
   * Present, true, once some kind's total passed Number.MAX_SAFE_INTEGER and shows that bound instead
   * of the sum, so a log holding absurd counts never stops the read model (docs/http.md).
   */
  readonly usageSaturated?: true;
}

interface OpenInvocation {
  readonly organizationId: string;
  readonly operationId: string;
  readonly model: string;
  readonly keyId?: string;
  readonly keyName?: string;
  readonly teamId?: string;
  readonly userId?: string;
  readonly tags?: readonly string[];
  readonly outcome?: Outcome;
  readonly usage: Usage;
}

/** The UTC day of an ISO-8601 instant. */
export function utcDay(instant: string): string {
  return new Date(Date.parse(instant)).toISOString().slice(0, 10);
}

/** Who a line's calls were for: the parts of its id after the key, where a call named any. */
export type LineAttribution = Pick<UsageDayView, 'teamId' | 'userId' | 'tags'>;

/**
 * The id of a day's line; organization first, then day, so an organization's lines list by day. A
 * gateway call's line ends with its key id; an operation's has no key part, as before keys existed.
 * Calls of a team's key, or that name a user or tags, have lines of their own, the attribution last
 * as JSON (a user id is any text, so it is quoted rather than joined).
 */
export function usageDayId(organizationId: string, day: string, operationId: string, model: string, keyId?: string, attribution: LineAttribution = {}): string {
  const { teamId, userId, tags } = attribution;
  const who = teamId === undefined && userId === undefined && tags === undefined ? '' : `\n${JSON.stringify([teamId ?? null, userId ?? null, tags ?? []])}`;
  return `${organizationId}\n${day}\n${operationId}\n${model}${keyId === undefined ? '' : `\n${keyId}`}${who}`;
}

/** The attribution of a gateway call as its line keeps it: only what the call named. */
function attributionOf(source: LineAttribution): LineAttribution {
  return {
    ...(source.teamId === undefined ? {} : { teamId: source.teamId }),
    ...(source.userId === undefined ? {} : { userId: source.userId }),
    ...(source.tags === undefined ? {} : { tags: source.tags }),
  };
}

/** Usage statements per organization, by operation, model, gateway key and UTC day (README.md "Invoicing"). */
export const usageStatementsProjection: Projection<InvocationRecordedEvent | BatchRecordedEvent> = {
  name: USAGE_STATEMENTS_PROJECTION,
  // 2: a gateway call's line is its key's. 3: and its team's, user's and tags' (docs/gateway.md "Who spent it").
  // 4: Message Batches' requests, on their key's and model's lines under GATEWAY_BATCH_OPERATION_ID.
  version: 4,
  handles: ['InvocationEstimated', 'InvocationRefused', 'InvocationCompleted', 'InvocationFailed', 'InvocationSettled', 'GatewayBatchCreated', 'GatewayBatchResultsRecorded', 'GatewayBatchSettled'],
  apply(recorded, tx) {
    if (recorded.streamName.startsWith(GATEWAY_BATCH_STREAM_PREFIX)) return applyBatchEvent(recorded.streamName.slice(GATEWAY_BATCH_STREAM_PREFIX.length), recorded as BatchRecordedEvent, tx);
    const event = currentLedgerEvent(recorded as InvocationRecordedEvent);
    const invocationId = streamId(event.streamName, 'invocation');
    if (invocationId === undefined) return;
    if (event.type === 'InvocationEstimated') {
      const { organizationId, operationId, publication, gateway } = event.data;
      const key = gateway === undefined ? {} : { keyId: gateway.keyId, keyName: gateway.keyName, ...attributionOf(gateway) };
      tx.put(OPEN_COLLECTION, invocationId, { organizationId, operationId, model: publication?.routing.model ?? '', ...key, usage: NO_USAGE } satisfies OpenInvocation);
      return;
    }
    const open = tx.get<OpenInvocation>(OPEN_COLLECTION, invocationId);
    if (open === undefined) return;
    switch (event.type) {
      case 'InvocationCompleted':
      case 'InvocationFailed':
        tx.put(OPEN_COLLECTION, invocationId, {
          ...open,
          outcome: event.type === 'InvocationCompleted' ? event.data.outcome : 'failed',
          // The priced kinds only, so the line sums exactly what an invoice prices (each total within the range already).
          usage: addUsageSaturating(NO_USAGE, event.data.usageTotals).usage,
        } satisfies OpenInvocation);
        return;
      case 'InvocationRefused': {
        const line = lineOf(tx.get<UsageDayView>(USAGE_DAY_COLLECTION, idOf(open, event.data.refusedAt)), open, event.data.refusedAt);
        const reason = event.data.reason;
        put(tx, { ...line, refused: line.refused + 1, refusals: { ...line.refusals, [reason]: (line.refusals[reason] ?? 0) + 1 } });
        tx.delete(OPEN_COLLECTION, invocationId);
        return;
      }
      case 'InvocationSettled': {
        const { settledAt, chargeCredits } = event.data;
        const line = lineOf(tx.get<UsageDayView>(USAGE_DAY_COLLECTION, idOf(open, settledAt)), open, settledAt);
        const outcome: StatementOutcome = open.outcome ?? NO_OUTCOME;
        const tokens = addUsageSaturating(line.tokens, open.usage);
        put(tx, {
          ...line,
          credits: line.credits + chargeCredits,
          settled: line.settled + 1,
          outcomes: { ...line.outcomes, [outcome]: (line.outcomes[outcome] ?? 0) + 1 },
          tokens: tokens.usage,
          ...(tokens.saturated ? { usageSaturated: true } : {}),
        });
        tx.delete(OPEN_COLLECTION, invocationId);
        return;
      }
      default:
        return;
    }
  },
};

function idOf(open: OpenInvocation, instant: string): string {
  return usageDayId(open.organizationId, utcDay(instant), open.operationId, open.model, open.keyId, open);
}

/** The day's line this invocation adds to; a key's line takes the name its latest call had. */
function lineOf(existing: UsageDayView | undefined, open: OpenInvocation, instant: string): UsageDayView {
  if (existing !== undefined) return open.keyName === undefined || existing.keyName === open.keyName ? existing : { ...existing, keyName: open.keyName };
  return {
    organizationId: open.organizationId,
    day: utcDay(instant),
    operationId: open.operationId,
    model: open.model,
    ...(open.keyId === undefined ? {} : { keyId: open.keyId, keyName: open.keyName }),
    ...attributionOf(open),
    credits: 0,
    settled: 0,
    outcomes: {},
    refused: 0,
    refusals: {},
    tokens: NO_USAGE,
  };
}

function put(tx: Parameters<Projection['apply']>[1], line: UsageDayView): void {
  tx.put(USAGE_DAY_COLLECTION, usageDayId(line.organizationId, line.day, line.operationId, line.model, line.keyId, line), line, { indexKey: line.organizationId });
}

/** A Message Batch's event as the log records it. */
type BatchRecordedEvent = RecordedEvent<GatewayBatchEvent['type']> & GatewayBatchEvent;

/** A batch's results so far, per model: what its settlement brings to its key's lines. */
interface OpenBatch {
  readonly organizationId: string;
  readonly keyId: string;
  readonly keyName: string;
  readonly models: Readonly<Record<string, { readonly credits: number; readonly outcomes: Readonly<Partial<Record<StatementOutcome, number>>>; readonly tokens: Usage; readonly saturated: boolean }>>;
}

/** A batch request's result as a statement counts its outcome: Anthropic's 24-hour bound ends an expired one. */
const OUTCOME_OF_RESULT: Readonly<Record<BatchResultType, Outcome>> = { succeeded: 'completed', errored: 'failed', canceled: 'cancelled', expired: 'time_limit' };

/**
 * Message Batches (docs/gateway.md "Message Batches"): each result is counted on its model's line of
 * the batch's key, on the day the batch was settled (when the account charged it), each request as
 * one settled request with its outcome, its charge and its tokens.
 */
function applyBatchEvent(batchId: string, event: GatewayBatchEvent, tx: Parameters<Projection['apply']>[1]): void {
  const openId = `batch\n${batchId}`;
  if (event.type === 'GatewayBatchCreated') {
    const { organizationId, keyId, keyName } = event.data;
    tx.put(OPEN_COLLECTION, openId, { organizationId, keyId, keyName, models: {} } satisfies OpenBatch);
    return;
  }
  const open = tx.get<OpenBatch>(OPEN_COLLECTION, openId);
  if (open === undefined) return;
  if (event.type === 'GatewayBatchResultsRecorded') {
    const models = { ...open.models };
    for (const result of event.data.results) {
      const sum = models[result.model] ?? { credits: 0, outcomes: {}, tokens: NO_USAGE, saturated: false };
      const outcome = OUTCOME_OF_RESULT[result.type];
      const tokens = result.usage === undefined ? { usage: sum.tokens, saturated: false } : addUsageSaturating(sum.tokens, result.usage);
      models[result.model] = { credits: sum.credits + result.priceCredits, outcomes: { ...sum.outcomes, [outcome]: (sum.outcomes[outcome] ?? 0) + 1 }, tokens: tokens.usage, saturated: sum.saturated || tokens.saturated };
    }
    tx.put(OPEN_COLLECTION, openId, { ...open, models } satisfies OpenBatch);
    return;
  }
  if (event.type !== 'GatewayBatchSettled') return;
  const { settledAt } = event.data;
  for (const [model, sum] of Object.entries(open.models)) {
    const asCall: OpenInvocation = { organizationId: open.organizationId, operationId: GATEWAY_BATCH_OPERATION_ID, model, keyId: open.keyId, keyName: open.keyName, usage: NO_USAGE };
    const line = lineOf(tx.get<UsageDayView>(USAGE_DAY_COLLECTION, idOf(asCall, settledAt)), asCall, settledAt);
    const tokens = addUsageSaturating(line.tokens, sum.tokens);
    const outcomes: Partial<Record<StatementOutcome, number>> = { ...line.outcomes };
    let settled = line.settled;
    for (const [outcome, count] of Object.entries(sum.outcomes) as [StatementOutcome, number][]) {
      outcomes[outcome] = (outcomes[outcome] ?? 0) + count;
      settled += count;
    }
    put(tx, { ...line, credits: line.credits + sum.credits, settled, outcomes, tokens: tokens.usage, ...(tokens.saturated || sum.saturated ? { usageSaturated: true } : {}) });
  }
  tx.delete(OPEN_COLLECTION, openId);
}
