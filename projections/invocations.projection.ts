import type { RecordedEvent } from '../src/event-store/event-store.port';
import { INVOCATION_EVENT_TYPES, type GatewayCallFacts, type InvocationEvent, type InvocationStatus } from '../src/invocations/invocation.events';
import type { Projection } from '../src/projection-runner';
import type { EndingLimit, FaultClass, Outcome } from '../src/runtime';
import { streamId } from './stream-names';

export const INVOCATIONS_PROJECTION = 'invocations';
/** One document per invocation (docs/http.md `GET /v1/invocations/:id`), indexed by organization. */
export const INVOCATION_COLLECTION = 'invocation';
/** Invocations not yet final (refused or settled): what the sweep looks at. */
export const OPEN_COLLECTION = 'open';

/** Which gateway key made a gateway call, and the model it asked for (docs/gateway.md). */
export interface InvocationGatewayView {
  readonly keyId: string;
  /** The key's name when the call was made. */
  readonly keyName: string;
  readonly model: string;
  /** The key's team when the call was made (docs/gateway.md "Teams"); absent: none. */
  readonly teamId?: string;
  /** The caller's `metadata.user_id`, as sent (docs/gateway.md "Who spent it"); absent when none. */
  readonly userId?: string;
  /** The caller's `x-ledger-tags`; absent when none. */
  readonly tags?: readonly string[];
}

export interface InvocationView {
  readonly invocationId: string;
  readonly organizationId: string;
  readonly operationId: string;
  /** Present for a gateway call only. */
  readonly gateway?: InvocationGatewayView;
  readonly state: InvocationStatus;
  readonly publicationVersion?: number;
  readonly estimate: number;
  readonly charge: number;
  /** A gateway call's attempt price above its hold, recorded at settlement (docs/gateway.md "Settlement"); absent when none. */
  readonly overrunCredits?: number;
  readonly outcome?: Outcome;
  readonly endingLimit?: EndingLimit;
  readonly fault?: FaultClass;
  readonly refusalReason?: string;
  readonly turnsUsed: number;
  readonly toolCallsUsed: number;
  readonly spentCredits: number;
  readonly attemptCount: number;
  readonly settlementTransition?: number;
  readonly estimatedAt: string;
  readonly settledAt?: string;
  /**
   * Its latest sign of life by the service's clock, as its own events date it (a transition's `…At`,
   * or the end of an attempt): what the sweep compares with that same clock.
   */
  readonly lastActivityAt: string;
  /** The lease of the instance that runs it, for recovery (src/invocations/instance-lease.ts); not answered. */
  readonly ownerLeaseId?: string;
}

/** What `GET /v1/invocations/:id` answers, in this order: the view without the sweep's bookkeeping. */
export const INVOCATION_STATUS_FIELDS = [
  'invocationId',
  'organizationId',
  'operationId',
  'gateway',
  'state',
  'outcome',
  'refusalReason',
  'publicationVersion',
  'endingLimit',
  'fault',
  'estimate',
  'charge',
  'overrunCredits',
  'turnsUsed',
  'toolCallsUsed',
  'spentCredits',
  'attemptCount',
  'estimatedAt',
  'settledAt',
] as const satisfies readonly (keyof InvocationView)[];

/** The fields `fields` names, in their order, each left out where the view has none. */
export function pickFields<View extends object, Field extends keyof View>(view: View, fields: readonly Field[]): Pick<View, Field> {
  const picked: Partial<Pick<View, Field>> = {};
  for (const field of fields) if (view[field] !== undefined) picked[field] = view[field];
  return picked as Pick<View, Field>;
}

export interface OpenInvocationView {
  readonly invocationId: string;
  readonly organizationId: string;
  readonly state: InvocationStatus;
  readonly lastActivityAt: string;
  /** Absent for an invocation written before owners were recorded. */
  readonly ownerLeaseId?: string;
}

export type InvocationRecordedEvent = RecordedEvent<InvocationEvent['type']> & InvocationEvent;

/** The state of every invocation, and the set still open. */
export const invocationsProjection: Projection<InvocationRecordedEvent> = {
  name: INVOCATIONS_PROJECTION,
  // 2: lastActivityAt from the events' own times instead of the store's recordedAt. 3: a gateway call's key and model.
  // 4: the owner's lease, for recovery. 5: a gateway call's user and tags.
  version: 5,
  handles: INVOCATION_EVENT_TYPES,
  apply(event, tx) {
    const invocationId = streamId(event.streamName, 'invocation');
    if (invocationId === undefined) return;
    const before = tx.get<InvocationView>(INVOCATION_COLLECTION, invocationId);
    const after = applyInvocationEvent(before, invocationId, event);
    if (after === undefined) return;
    tx.put(INVOCATION_COLLECTION, invocationId, after, { indexKey: after.organizationId });
    if (after.state === 'refused' || after.state === 'settled') {
      tx.delete(OPEN_COLLECTION, invocationId);
    } else {
      const open: OpenInvocationView = {
        invocationId,
        organizationId: after.organizationId,
        state: after.state,
        lastActivityAt: after.lastActivityAt,
        ...(after.ownerLeaseId === undefined ? {} : { ownerLeaseId: after.ownerLeaseId }),
      };
      tx.put(OPEN_COLLECTION, invocationId, open);
    }
  },
};

/** The view an invocation starts with, from its InvocationEstimated. */
function estimatedView(invocationId: string, data: Extract<InvocationEvent, { type: 'InvocationEstimated' }>['data'], at: string): InvocationView {
  const { organizationId, operationId, publication, estimatedAt, gateway, ownerLeaseId } = data;
  return {
    invocationId,
    organizationId,
    operationId,
    ...(gateway === undefined ? {} : { gateway: gatewayViewOf(gateway) }),
    state: 'estimated',
    ...(publication === null ? {} : { publicationVersion: publication.version }),
    estimate: publication?.creditHold ?? 0,
    charge: 0,
    turnsUsed: 0,
    toolCallsUsed: 0,
    spentCredits: 0,
    attemptCount: 0,
    estimatedAt,
    lastActivityAt: at,
    ...(ownerLeaseId === undefined ? {} : { ownerLeaseId }),
  };
}

/** Folds one event of an invocation stream into its lifecycle view (undefined: not an invocation's). */
export function applyInvocationEvent(
  view: InvocationView | undefined,
  invocationId: string,
  event: InvocationRecordedEvent,
): InvocationView | undefined {
  const at = activityAt(event);
  if (event.type === 'InvocationEstimated') return estimatedView(invocationId, event.data, at);
  if (view === undefined) return undefined;
  switch (event.type) {
    case 'InvocationRefused':
      return { ...view, state: 'refused', refusalReason: event.data.reason, lastActivityAt: at };
    case 'InvocationReserved':
      return { ...view, state: 'reserved', lastActivityAt: at };
    case 'InvocationDispatched':
      return { ...view, state: 'dispatched', lastActivityAt: at };
    case 'AttemptRecorded':
      return {
        ...view,
        attemptCount: view.attemptCount + 1,
        spentCredits: view.spentCredits + event.data.priceCredits,
        turnsUsed: Math.max(view.turnsUsed, event.data.turn),
        lastActivityAt: at,
      };
    case 'InvocationCompleted':
    case 'InvocationFailed': {
      const { turnsUsed, toolCallsUsed, spentCredits, attemptCount } = event.data;
      return {
        ...view,
        state: event.type === 'InvocationCompleted' ? 'completed' : 'failed',
        outcome: event.type === 'InvocationCompleted' ? event.data.outcome : 'failed',
        ...(event.type === 'InvocationCompleted' && event.data.endingLimit !== undefined ? { endingLimit: event.data.endingLimit } : {}),
        ...(event.type === 'InvocationFailed' ? { fault: event.data.fault } : {}),
        turnsUsed,
        toolCallsUsed,
        spentCredits,
        attemptCount,
        lastActivityAt: at,
      };
    }
    case 'InvocationPending':
      return { ...view, state: 'pending', lastActivityAt: at };
    case 'InvocationSettled': {
      const { chargeCredits: charge, overrunCredits, transition: settlementTransition, settledAt } = event.data;
      return { ...view, state: 'settled', charge, ...(overrunCredits === undefined ? {} : { overrunCredits }), settlementTransition, settledAt, lastActivityAt: at };
    }
  }
}

/**
 * When the event says it happened, by the service's clock (never the store's `recordedAt`, which is
 * another clock: the store's, or EventStoreDB's server's).
 */
function activityAt(event: InvocationRecordedEvent): string {
  switch (event.type) {
    case 'InvocationEstimated':
      return event.data.estimatedAt;
    case 'InvocationRefused':
      return event.data.refusedAt;
    case 'InvocationReserved':
      return event.data.reservedAt;
    case 'InvocationDispatched':
      return event.data.dispatchedAt;
    case 'AttemptRecorded':
      return new Date(event.data.startedAtMs + event.data.durationMs).toISOString();
    case 'InvocationCompleted':
      return event.data.completedAt;
    case 'InvocationFailed':
      return event.data.failedAt;
    case 'InvocationPending':
      return event.data.pendingAt;
    case 'InvocationSettled':
      return event.data.settledAt;
    case 'InvocationCancellationRequested':
      return event.data.requestedAt;
  }
}

/** What the views show of a gateway call: its key, model and attribution, not its rate card bookkeeping. */
export function gatewayViewOf(gateway: GatewayCallFacts): InvocationGatewayView {
  const { keyId, keyName, model, teamId, userId, tags } = gateway;
  return { keyId, keyName, model, ...(teamId === undefined ? {} : { teamId }), ...(userId === undefined ? {} : { userId }), ...(tags === undefined ? {} : { tags }) };
}
