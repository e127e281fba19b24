import { gatewayViewOf } from '../../projections';
import type { RecordedEvent } from '../event-store/event-store.port';
import type { InvocationEvent, InvocationStatus } from '../invocations/invocation.events';

/**
 * What a client following an invocation over Server-Sent Events receives for one event of its stream:
 * the type, the stream revision (also the SSE `id`), when it happened, the state it left the invocation
 * in, and the few figures a client needs to follow progress. Never the stored event itself: no
 * idempotency key, no request fingerprint, no copy of the publication (and the log holds no
 * conversation text to leak).
 */
export interface InvocationProgress {
  readonly type: InvocationEvent['type'];
  readonly revision: number;
  /** ISO-8601: when the event happened by the ledger's clock. */
  readonly time: string;
  readonly invocationId: string;
  /** The lifecycle state after this event (a cancellation request changes none). */
  readonly state: InvocationStatus;
  readonly operationId?: string;
  readonly organizationId?: string;
  /** `InvocationEstimated` of a gateway call: its key and model (docs/gateway.md). */
  readonly gateway?: { readonly keyId: string; readonly keyName: string; readonly model: string };
  readonly publicationVersion?: number;
  readonly estimate?: number;
  readonly refusalReason?: string;
  readonly creditHold?: number;
  readonly attempt?: AttemptProgress;
  readonly outcome?: string;
  readonly endingLimit?: string;
  readonly fault?: string;
  readonly turnsUsed?: number;
  readonly toolCallsUsed?: number;
  readonly spentCredits?: number;
  readonly attemptCount?: number;
  readonly charge?: number;
  readonly settlementTransition?: number;
  readonly requestedBy?: string;
}

/** One provider attempt as a follower sees it: no provider request id, no usage breakdown. */
export interface AttemptProgress {
  readonly turn: number;
  readonly retry: number;
  readonly classification: string;
  readonly model: string;
  readonly durationMs: number;
  readonly priceCredits: number;
}

/**
 * Reads an invocation's recorded events into their public form, in revision order. Keeps the state
 * across events because a follower resuming with `Last-Event-ID` must still be told where it stands.
 */
export class InvocationProgressReader {
  private state: InvocationStatus = 'estimated';

  constructor(private readonly invocationId: string) {}

  read(recorded: RecordedEvent): InvocationProgress {
    const event = { type: recorded.type, data: recorded.data } as InvocationEvent;
    const common = { type: event.type, revision: Number(recorded.revision), invocationId: this.invocationId };
    switch (event.type) {
      case 'InvocationEstimated': {
        const { operationId, organizationId, publication, estimatedAt, gateway } = event.data;
        return this.next('estimated', common, estimatedAt, {
          operationId,
          organizationId,
          ...(gateway === undefined ? {} : { gateway: gatewayViewOf(gateway) }),
          ...(publication === null ? {} : { publicationVersion: publication.version }),
          estimate: publication?.creditHold ?? 0,
        });
      }
      case 'InvocationRefused':
        return this.next('refused', common, event.data.refusedAt, { refusalReason: event.data.reason });
      case 'InvocationReserved':
        return this.next('reserved', common, event.data.reservedAt, { creditHold: event.data.creditHold });
      case 'InvocationDispatched':
        return this.next('dispatched', common, event.data.dispatchedAt, {});
      case 'AttemptRecorded': {
        const { turn, retry, classification, model, durationMs, priceCredits, startedAtMs } = event.data;
        return this.next('dispatched', common, new Date(startedAtMs + durationMs).toISOString(), {
          attempt: { turn, retry, classification, model, durationMs, priceCredits },
        });
      }
      case 'InvocationCompleted':
        return this.next('completed', common, event.data.completedAt, {
          outcome: event.data.outcome,
          ...(event.data.endingLimit === undefined ? {} : { endingLimit: event.data.endingLimit }),
          ...figuresOf(event.data),
        });
      case 'InvocationFailed':
        return this.next('failed', common, event.data.failedAt, { outcome: 'failed', fault: event.data.fault, ...figuresOf(event.data) });
      case 'InvocationPending':
        return this.next('pending', common, event.data.pendingAt, {});
      case 'InvocationSettled':
        return this.next('settled', common, event.data.settledAt, { charge: event.data.chargeCredits, settlementTransition: event.data.transition });
      case 'InvocationCancellationRequested':
        return this.next(this.state, common, event.data.requestedAt, { requestedBy: event.data.requestedBy });
    }
    // A type this version does not know (written by a newer one): say only that it happened.
    return this.next(this.state, common, recorded.recordedAt, {});
  }

  private next(state: InvocationStatus, common: Pick<InvocationProgress, 'type' | 'revision' | 'invocationId'>, time: string, fields: Partial<InvocationProgress>): InvocationProgress {
    this.state = state;
    return { ...common, time, state, ...fields };
  }
}

function figuresOf(figures: { turnsUsed: number; toolCallsUsed: number; spentCredits: number; attemptCount: number }): Partial<InvocationProgress> {
  const { turnsUsed, toolCallsUsed, spentCredits, attemptCount } = figures;
  return { turnsUsed, toolCallsUsed, spentCredits, attemptCount };
}
