/**
 * Recorded events for projection tests, built from the deciders' event types, so a change to an event's
 * shape breaks these fixtures at compile time rather than letting them drift.
 */
import type { AdmissionRefusal } from '../../../src/accounts/admission.policy';
import type { OperationPublished, Publication } from '../../../src/catalog/operation.events';
import type { DomainEvent } from '../../../src/domain/decider';
import type { RecordedEvent } from '../../../src/event-store/event-store.port';
import type {
  AttemptRecorded,
  CompletedOutcome,
  ConversationFigures,
  InvocationCompleted,
  InvocationDispatched,
  GatewayCallFacts,
  InvocationEstimated,
  InvocationFailed,
  InvocationPending,
  InvocationRefused,
  InvocationReserved,
  InvocationSettled,
  RefusalTransition,
  SettledBy,
  SettlementTransition,
} from '../../../src/invocations/invocation.events';
import type { AttemptRecord, EndingLimit, FaultClass, Usage } from '../../../src/runtime';

export const T0_MS = Date.parse('2025-03-01T09:00:00.000Z');
/** ISO-8601 instant `ms` after T0. */
export const at = (ms: number): string => new Date(T0_MS + ms).toISOString();

/** A log with positions 1, 2, 3… and per-stream revisions, as the embedded store numbers them. */
export class EventLog {
  readonly events: RecordedEvent[] = [];
  private readonly revisions = new Map<string, bigint>();

  append(streamName: string, ...events: readonly DomainEvent[]): this {
    for (const event of events) {
      const revision = (this.revisions.get(streamName) ?? -1n) + 1n;
      this.revisions.set(streamName, revision);
      const position = BigInt(this.events.length + 1);
      this.events.push({
        id: `event-${position}`,
        type: event.type,
        data: event.data,
        metadata: { schemaVersion: 1 },
        streamName,
        revision,
        position,
        recordedAt: at(Number(position)),
      });
    }
    return this;
  }

  /** Appends to `invocation-<invocationId>`. */
  invocation(invocationId: string, ...events: readonly DomainEvent[]): this {
    return this.append(`invocation-${invocationId}`, ...events);
  }
}

export function publicationV(version: number, overrides: Partial<Publication> = {}): Publication {
  return {
    version,
    routing: { provider: 'scripted', model: 'scripted-1' },
    limits: { maxTurns: 4, maxToolCalls: 10, totalTimeMs: 60_000, attemptTimeoutMs: 20_000, maxOutputTokens: 1_024, maxAttemptsPerTurn: 3 },
    prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 3_750, cacheReadPerMTok: 300, webSearchPerThousand: 0 },
    creditHold: 500,
    enabled: true,
    publishedAt: at(-86_400_000 + version),
    ...overrides,
  };
}

export function published(operationId: string, publication: Publication): OperationPublished {
  return { type: 'OperationPublished', data: { operationId, ...publication } };
}

export function estimated(
  publication: Publication | null,
  ids: { invocationId?: string; operationId?: string; organizationId?: string } = {},
): InvocationEstimated {
  return {
    type: 'InvocationEstimated',
    data: {
      invocationId: ids.invocationId ?? 'inv-1',
      operationId: ids.operationId ?? 'demo.arithmetic',
      organizationId: ids.organizationId ?? 'acme',
      publication,
      estimatedAt: at(0),
    },
  };
}

/** A gateway call's first event (docs/gateway.md): its rate card version as a one-attempt publication holding `creditHold`. */
export function gatewayEstimated(creditHold: number, facts: Partial<GatewayCallFacts> = {}, ids: { invocationId?: string; organizationId?: string } = {}): InvocationEstimated {
  const gateway: GatewayCallFacts = { keyId: 'key-1', keyName: 'ci-bot', model: 'claude-sonnet-5-5', rateCardVersion: 2, stream: false, ...facts };
  const publication = publicationV(gateway.rateCardVersion, {
    routing: { provider: 'anthropic', model: gateway.model },
    limits: { maxTurns: 1, maxToolCalls: 0, totalTimeMs: 60_000, attemptTimeoutMs: 60_000, maxOutputTokens: 64_000, maxAttemptsPerTurn: 1 },
    creditHold,
  });
  const event = estimated(publication, { ...ids, operationId: 'gateway.anthropic-messages' });
  return { ...event, data: { ...event.data, gateway } };
}

export function refused(refusal: AdmissionRefusal, transition: RefusalTransition): InvocationRefused {
  return { type: 'InvocationRefused', data: { ...refusal, transition, refusedAt: at(5) } };
}

export const reserved = (creditHold = 500): InvocationReserved => ({ type: 'InvocationReserved', data: { creditHold, reservedAt: at(10) } });
export const dispatched = (): InvocationDispatched => ({ type: 'InvocationDispatched', data: { dispatchedAt: at(20) } });

export const usage = (inputTokens: number, outputTokens = 0): Usage => ({ inputTokens, outputTokens, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 });

/** A successful attempt of `turn`, 30 ms long, unless the overrides say otherwise. */
export function attempt(turn: number, retry: number, overrides: Partial<AttemptRecord> = {}): AttemptRecorded {
  return {
    type: 'AttemptRecorded',
    data: {
      turn,
      retry,
      startedAtMs: T0_MS + 100 * turn + 10 * retry,
      durationMs: 30,
      waitBeforeMs: retry === 0 ? 0 : 500 * retry,
      classification: 'ok',
      timedOut: false,
      model: 'scripted-1',
      priceCredits: 0,
      ...overrides,
    },
  };
}

export function figures(overrides: Partial<ConversationFigures> = {}): ConversationFigures {
  return {
    turnsUsed: 1,
    toolCallsUsed: 0,
    spentCredits: 0,
    attemptCount: 1,
    attemptsTruncated: false,
    usageTotals: usage(0),
    usageReported: true,
    ...overrides,
  };
}

export function completed(outcome: CompletedOutcome, conversation: ConversationFigures, endingLimit?: EndingLimit): InvocationCompleted {
  return {
    type: 'InvocationCompleted',
    data: { ...conversation, outcome, ...(endingLimit === undefined ? {} : { endingLimit }), completedAt: at(900) },
  };
}

export function failed(fault: FaultClass, conversation: ConversationFigures): InvocationFailed {
  return { type: 'InvocationFailed', data: { ...conversation, fault, failedAt: at(900) } };
}

export const pending = (): InvocationPending => ({ type: 'InvocationPending', data: { pendingAt: at(910) } });

export function settled(transition: SettlementTransition, chargeCredits: number, settledBy: SettledBy = 'runtime', heldCredits = 500): InvocationSettled {
  return { type: 'InvocationSettled', data: { transition, chargeCredits, heldCredits, settledBy, settledAt: at(1_000) } };
}
