/**
 * The invocation decider: STATE-PFM-LLM-001 (docs/lifecycle.md) and attempt records
 * (docs/rules.md rule 07). Exactly the fourteen transitions of the table; any other command in a state
 * throws IllegalTransitionError naming both and emits nothing. Settlement charges are computed here,
 * from the state, never taken from a caller.
 */
import { ACCESS_REFUSAL_REASONS, ADMISSION_REFUSAL_REASONS } from '../accounts/admission.policy';
import { MAX_GATEWAY_KEY_NAME_CHARS } from '../accounts/gateway-keys';
import { MAX_CALL_USER_ID_CHARS, tagListProblem } from './call-attribution';
import { MAX_CREDIT_HOLD_CREDITS, MAX_MODEL_NAME_CHARS } from '../catalog/publication.validation';
import type { Decider } from '../domain/decider';
import { IllegalTransitionError, ValidationError } from '../domain/domain.errors';
import { FieldChecks, isoToMs } from '../domain/field-checks';
import { REQUEST_FINGERPRINT_CHARS } from './request-fingerprint';
import { AttemptRecord, LIMIT_OF_OUTCOME, Outcome, OUTCOMES, Prices } from '../runtime/conversation.types';
import { priceAttempt } from '../runtime/pricing';
import { FAULT_CLASSES } from '../runtime/faults';
import type {
  CompleteInvocation,
  EstimateInvocation,
  FailInvocation,
  InvocationCommand,
  RecordAttempt,
  RefuseInvocation,
  SettleInvocation,
} from './invocation.commands';
import {
  GatewayCallFacts,
  InvocationEvent,
  InvocationStatus,
  MAX_RETAINED_ATTEMPTS,
  SETTLED_BY,
  SettledBy,
  SettlementTransition,
  STALE_CLOSERS,
  type ExpiredOwnerLease,
  type StaleCloser,
} from './invocation.events';
import { staleClosing } from './invocation-ownership';
import { attemptsSettlement, evolveInvocation, initialInvocationState, InvocationState, isUnmeasured } from './invocation.state';
import { readAttempt, readReport, refusalFromState } from './invocation.validation';

type Status = InvocationStatus | 'initial';

/** Where each command may be decided at all; finer guards (e.g. who may settle) come after. */
const ALLOWED_IN: Readonly<Record<InvocationCommand['type'], readonly Status[]>> = {
  EstimateInvocation: ['initial'],
  RefuseInvocation: ['estimated'],
  ReserveInvocation: ['estimated'],
  DispatchInvocation: ['reserved'],
  RecordAttempt: ['dispatched'],
  CompleteInvocation: ['dispatched'],
  FailInvocation: ['dispatched'],
  MarkInvocationPending: ['completed'],
  SettleInvocation: ['estimated', 'reserved', 'dispatched', 'completed', 'pending', 'failed'],
  // Until the conversation has a result: afterwards there is nothing left to stop (409).
  RequestCancellation: ['estimated', 'reserved', 'dispatched'],
};

/** Longest `requestedBy` of a cancellation, in characters. */
export const MAX_REQUESTED_BY_CHARS = 200;

const COMPLETED_OUTCOMES = OUTCOMES.filter((outcome) => outcome !== 'failed');

/**
 * Decides one command. Transitions: Estimate (→ estimated), Refuse (1, 2), Reserve (3), Dispatch (4),
 * Complete (5), Fail (6), MarkPending (7), Settle (8–14). Settle's charge, by the state it closes:
 * completed → spent (8); pending → estimate (9); failed → spent (10), a gateway call's at most its hold with
 * the rest recorded as its overrun; dispatched → estimate, by the
 * runtime's exception path (11) or a stale closer, the sweep or recovery (14); estimated (12) and reserved (13) → 0, stale closers only.
 * Once a result is recorded (completed, pending, failed) any closer (runtime, exception, sweep, recovery) may close
 * it at the same charge, so a crash after the result does not strand it.
 */
export function decideInvocation(command: InvocationCommand, state: InvocationState): InvocationEvent[] {
  const allowed = ALLOWED_IN[command.type];
  if (allowed === undefined) throw ValidationError.of('type', `unknown invocation command ${String(command.type)}`);
  if (!allowed.includes(state.status)) throw new IllegalTransitionError(state.status, command.type);

  switch (command.type) {
    case 'EstimateInvocation':
      return estimate(command);
    case 'RefuseInvocation':
      return refuse(command, state);
    case 'ReserveInvocation': {
      const reservedAt = instantOrThrow('reservedAt', command.data.reservedAt);
      if (state.publication === null || !state.publication.enabled) {
        throw new IllegalTransitionError(state.status, command.type, 'the operation is unknown or disabled; refuse it (transition 1)');
      }
      return [{ type: 'InvocationReserved', data: { creditHold: state.estimate, reservedAt } }];
    }
    case 'DispatchInvocation':
      return [{ type: 'InvocationDispatched', data: { dispatchedAt: instantOrThrow('dispatchedAt', command.data.dispatchedAt) } }];
    case 'RecordAttempt':
      return recordAttempt(command, state);
    case 'CompleteInvocation':
      return complete(command, state);
    case 'FailInvocation':
      return fail(command, state);
    case 'MarkInvocationPending': {
      const pendingAt = instantOrThrow('pendingAt', command.data.pendingAt);
      if (!isUnmeasured(state)) {
        throw new IllegalTransitionError(state.status, command.type, 'its cost was measured (or nothing was sent); settle it at its spend (transition 8)');
      }
      return [{ type: 'InvocationPending', data: { pendingAt } }];
    }
    case 'SettleInvocation':
      return settle(command, state);
    case 'RequestCancellation': {
      const checks = new FieldChecks();
      const requestedBy = checks.text('requestedBy', command.data.requestedBy, MAX_REQUESTED_BY_CHARS);
      const requestedAt = checks.instant('requestedAt', command.data.requestedAt);
      checks.throwIfAny();
      // Asked already: the first request stands, and a repeat writes nothing.
      if (state.cancellation !== undefined) return [];
      return [{ type: 'InvocationCancellationRequested', data: { requestedBy, requestedAt } }];
    }
  }
}

export const invocationDecider: Decider<InvocationCommand, InvocationEvent, InvocationState> = {
  decide: decideInvocation,
  evolve: evolveInvocation,
  initialState: initialInvocationState,
};

function estimate({ data }: EstimateInvocation): InvocationEvent[] {
  const checks = new FieldChecks();
  const invocationId = checks.id('invocationId', data.invocationId);
  const operationId = checks.id('operationId', data.operationId);
  const organizationId = checks.id('organizationId', data.organizationId);
  const idempotencyKey = data.idempotencyKey === undefined ? undefined : checks.idempotencyKey('idempotencyKey', data.idempotencyKey);
  const requestFingerprint =
    data.requestFingerprint === undefined ? undefined : checks.text('requestFingerprint', data.requestFingerprint, REQUEST_FINGERPRINT_CHARS);
  const estimatedAt = checks.instant('estimatedAt', data.estimatedAt);
  const gateway = data.gateway === undefined ? undefined : readGatewayFacts(checks, data.gateway);
  const ownerLeaseId = data.ownerLeaseId === undefined ? undefined : checks.id('ownerLeaseId', data.ownerLeaseId);
  if (data.publication === undefined) checks.add('publication', 'is required (null for an operation never published)');
  else if (data.publication !== null) {
    const publication = checks.object('publication', data.publication);
    checks.integer('publication.version', publication.version, { min: 1, max: Number.MAX_SAFE_INTEGER, unit: 'versions' });
    checks.integer('publication.creditHold', publication.creditHold, { min: 0, max: MAX_CREDIT_HOLD_CREDITS, unit: 'credits' });
  }
  checks.throwIfAny();
  return [
    {
      type: 'InvocationEstimated',
      data: {
        invocationId,
        operationId,
        organizationId,
        publication: data.publication,
        ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
        ...(requestFingerprint === undefined ? {} : { requestFingerprint }),
        ...(gateway === undefined ? {} : { gateway }),
        ...(ownerLeaseId === undefined ? {} : { ownerLeaseId }),
        estimatedAt,
      },
    },
  ];
}

/** A gateway call's facts, rebuilt field by field: nothing else rides along into the event. */
function readGatewayFacts(checks: FieldChecks, value: unknown): GatewayCallFacts {
  const facts = checks.object('gateway', value);
  return {
    keyId: checks.id('gateway.keyId', facts.keyId),
    keyName: checks.text('gateway.keyName', facts.keyName, MAX_GATEWAY_KEY_NAME_CHARS),
    model: checks.text('gateway.model', facts.model, MAX_MODEL_NAME_CHARS),
    rateCardVersion: checks.integer('gateway.rateCardVersion', facts.rateCardVersion, { min: 1, max: Number.MAX_SAFE_INTEGER, unit: 'versions' }),
    stream: checks.boolean('gateway.stream', facts.stream),
    ...(facts.teamId === undefined ? {} : { teamId: checks.id('gateway.teamId', facts.teamId) }),
    ...(facts.userId === undefined ? {} : { userId: checks.text('gateway.userId', facts.userId, MAX_CALL_USER_ID_CHARS) }),
    ...(facts.tags === undefined ? {} : { tags: readTags(checks, facts.tags) }),
  };
}

/** A call's tags as the event records them: the header's rule (call-attribution.ts), checked again. */
function readTags(checks: FieldChecks, tags: unknown): readonly string[] {
  const problem = tagListProblem(tags);
  if (problem !== undefined) checks.add('gateway.tags', problem);
  return tags as readonly string[];
}

function refuse({ data }: RefuseInvocation, state: InvocationState): InvocationEvent[] {
  const checks = new FieldChecks();
  const reason = checks.oneOf('reason', data.reason, ADMISSION_REFUSAL_REASONS);
  const figures = checks.object('figures', data.figures);
  const refusedAt = checks.instant('refusedAt', data.refusedAt);
  checks.throwIfAny();
  const refusal = refusalFromState(checks, reason, figures, state);
  checks.throwIfAny();
  const transition = (ACCESS_REFUSAL_REASONS as readonly string[]).includes(reason) ? 1 : 2;
  return [{ type: 'InvocationRefused', data: { ...refusal, transition, refusedAt } }];
}

function recordAttempt({ data }: RecordAttempt, state: InvocationState): InvocationEvent[] {
  const publication = state.publication!; // dispatched implies reserved, which needs a publication
  const { limits } = publication;
  const attempt = readAttempt(data, limits);
  const { turn, retry, usage, priceCredits } = attempt;

  const last = state.lastAttempt;
  // The same attempt again is a retried append, not a new attempt.
  if (last !== undefined && last.turn === turn && last.retry === retry) return [];
  // Past the bound the attempt still counts, in the loop's totals at completion (docs/rules.md rule 07).
  if (state.attemptsRecorded >= MAX_RETAINED_ATTEMPTS) return [];
  const inOrder =
    last === undefined
      ? turn === 1 && retry === 0
      : (turn === last.turn && retry === last.retry + 1) || (turn === last.turn + 1 && retry === 0);
  if (!inOrder) {
    const expected = last === undefined ? 'turn 1 retry 0' : `turn ${last.turn} retry ${last.retry + 1} or turn ${last.turn + 1} retry 0`;
    throw ValidationError.of('turn', `attempts are recorded in order: expected ${expected}, got turn ${turn} retry ${retry}`);
  }
  const price = priceOf(usage, publication.prices);
  if (priceCredits !== price) {
    throw ValidationError.of('priceCredits', `is ${price} credits at rate version ${publication.version}, not ${priceCredits}`);
  }
  return [{ type: 'AttemptRecorded', data: attempt }];
}

function complete({ data }: CompleteInvocation, state: InvocationState): InvocationEvent[] {
  const checks = new FieldChecks();
  const outcome = checks.oneOf('outcome', data.outcome, COMPLETED_OUTCOMES) as Exclude<Outcome, 'failed'>;
  const completedAt = checks.instant('completedAt', data.completedAt);
  const figures = readReport(checks, data, state);
  const endingLimit = LIMIT_OF_OUTCOME[outcome];
  if (data.endingLimit !== undefined && data.endingLimit !== endingLimit) {
    checks.add('endingLimit', `outcome ${outcome} ends at ${endingLimit ?? 'no limit'}`);
  }
  checks.throwIfAny();
  return [
    {
      type: 'InvocationCompleted',
      data: { outcome, ...(endingLimit === undefined ? {} : { endingLimit }), ...figures, completedAt },
    },
  ];
}

function fail({ data }: FailInvocation, state: InvocationState): InvocationEvent[] {
  const checks = new FieldChecks();
  const fault = checks.oneOf('fault', data.fault, FAULT_CLASSES);
  const failedAt = checks.instant('failedAt', data.failedAt);
  const figures = readReport(checks, data, state);
  checks.throwIfAny();
  return [{ type: 'InvocationFailed', data: { fault, ...figures, failedAt } }];
}

function settle({ data }: SettleInvocation, state: InvocationState): InvocationEvent[] {
  const checks = new FieldChecks();
  const by = checks.oneOf('by', data.by, SETTLED_BY);
  const settledAt = checks.instant('settledAt', data.settledAt);
  const stale = isStaleCloser(by);
  const olderThanMs =
    stale
      ? checks.integer('olderThanMs', (data as { olderThanMs?: unknown }).olderThanMs, { min: 0, max: Number.MAX_SAFE_INTEGER, unit: 'ms' })
      : 0;
  checks.throwIfAny();
  const { transition, chargeCredits, overrunCredits = 0 } = settlementRule(state, by);
  // Not stale (any more), or owned by a live instance and inside its deadline: the sweep leaves it.
  const closing = stale ? staleClosing(state, isoToMs(settledAt), olderThanMs, (data as { ownerLease?: ExpiredOwnerLease }).ownerLease) : { ground: undefined };
  if (closing === undefined) return [];
  const heldCredits = state.accountHeld ? state.heldCredits : 0;
  const overrun = overrunCredits > 0 ? { overrunCredits } : {};
  const recovery = closing.ground === undefined ? {} : { recovery: closing.ground };
  return [{ type: 'InvocationSettled', data: { transition, chargeCredits, ...overrun, heldCredits, settledBy: by, settledAt, ...recovery } }];
}

/**
 * docs/lifecycle.md's settlement rows: which transition closes this state for this closer, and its
 * charge.
 */
function settlementRule(state: InvocationState, by: SettledBy): { transition: SettlementTransition; chargeCredits: number; overrunCredits?: number } {
  const refuse = (guard: string): never => {
    throw new IllegalTransitionError(state.status, 'SettleInvocation', guard);
  };
  switch (state.status) {
    case 'estimated':
      return isStaleCloser(by) ? { transition: 12, chargeCredits: 0 } : refuse(`only the sweep or recovery settles a request never reserved (transition 12), not ${by}`);
    case 'reserved':
      return isStaleCloser(by) ? { transition: 13, chargeCredits: 0 } : refuse(`only the sweep or recovery settles a reserved request (transition 13), not ${by}`);
    case 'dispatched':
      // Its real cost was never learned: charge the estimate.
      if (by === 'exception') return { transition: 11, chargeCredits: state.estimate };
      if (isStaleCloser(by)) return { transition: 14, chargeCredits: state.estimate };
      return refuse('the runtime settles a dispatched request after recording its result (complete or fail)');
    case 'completed':
      if (isUnmeasured(state)) return refuse('no attempt reported usage: mark it pending first (transition 7)');
      return { transition: 8, ...attemptsSettlement(state.spentCredits, state.estimate, state.chargeAtMostHold) };
    case 'pending':
      return { transition: 9, chargeCredits: state.estimate };
    case 'failed':
      // Billed failed attempts are not lost: charge what they cost.
      return { transition: 10, ...attemptsSettlement(state.spentCredits, state.estimate, state.chargeAtMostHold) };
    default:
      return refuse('it is not in flight');
  }
}

/** The sweep and recovery close stale requests (12–14) and must find them stale on the stream itself. */
function isStaleCloser(by: SettledBy): by is StaleCloser {
  return (STALE_CLOSERS as readonly string[]).includes(by);
}

function instantOrThrow(field: string, value: unknown): string {
  const checks = new FieldChecks();
  const instant = checks.instant(field, value);
  checks.throwIfAny();
  return instant;
}

/**
 * The attempt's price at the invocation's rate version (docs/rules.md rule 07), by the runtime's own
 * formula.
 */
function priceOf(usage: AttemptRecord['usage'], prices: Prices): number {
  try {
    return priceAttempt(usage, prices);
  } catch (error) {
    if (error instanceof RangeError) throw ValidationError.of('usage', error.message);
    throw error;
  }
}
