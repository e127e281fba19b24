/**
 * One run of an operation (docs/lifecycle.md "What one run does, in order") as pure steps, after
 * Emmett's Workflow: given what the run knows and what its last step observed, `decideRun` says what to
 * execute next and what the run knows then. Nothing here reads a clock, a store or a feature; the
 * handler (run-operation.handler.ts) executes each step, through the AggregateRepository or the
 * runtime, and feeds back what it observed with the instant it observed it.
 *
 * The sequence: read the key's first request (keyed only) → prepare → read the publication → admit on
 * the account (cached, then as read) → estimate → refuse (transitions 1, 2), or hold, reserve and
 * dispatch in one commit (3, 4) → converse → close, settle (5/6, 7, 8/9/10) and settle the account's
 * hold in one commit, or settle by the exception path (11) and then the account's hold.
 */
import type { AccountCommand } from '../accounts/account.commands';
import type { AccountState } from '../accounts/account.state';
import { AdmissionRefusedError, decideAdmission, refusalOf, type AdmissionRefusal } from '../accounts/admission.policy';
import { publicationInForce, type OperationState } from '../catalog/operation.decider';
import type { Publication } from '../catalog/operation.events';
import { IllegalTransitionError } from '../domain/domain.errors';
import type { PreparedConversation } from '../features/operation-feature';
import type { ToolLoopResult } from '../runtime';
import type { InvocationCommand } from './invocation.commands';
import { invocationSummary, type InvocationState, type InvocationSummary } from './invocation.state';
import { closeAndSettle, estimate, placeHold, refuseEstimate, reserveAndDispatch, settleHold, settlement, type LifecycleStep } from './invocation-lifecycle';
import { UnknownOrganizationError } from './invocation-errors';
import type { CancellationReason } from './running-invocations';

/** What the request says about the invocation, fixed for the whole run. */
export interface RunFacts {
  readonly invocationId: string;
  readonly operationId: string;
  readonly organizationId: string;
  readonly idempotencyKey?: string;
  /** With a key: the keyed fingerprint of its operation and input. */
  readonly fingerprint?: string;
  /** The lease of the instance that runs it (instance-lease.ts), recorded as its owner. */
  readonly ownerLeaseId?: string;
}

/** What the handler executes next. */
export type RunStep =
  /** Read the invocation's stream as it is: has the key's first request written it? */
  | { readonly type: 'ReadInvocation' }
  /** The feature's `prepare(input)`: bad input is refused here, before anything is written. */
  | { readonly type: 'Prepare' }
  | { readonly type: 'ReadPublication' }
  /** The account as cached (`cached`), or as its stream is. */
  | { readonly type: 'ReadAccount'; readonly cached: boolean }
  /** One command on the invocation's stream. */
  | { readonly type: 'Invoke'; readonly command: InvocationCommand }
  /** Commands on the invocation's stream decided in order and appended in ONE append. */
  | { readonly type: 'InvokeAll'; readonly steps: readonly LifecycleStep[] }
  /** One command on the account's stream. */
  | { readonly type: 'OnAccount'; readonly command: AccountCommand }
  /**
   * One command on the account's stream with steps on the invocation's in the same commit
   * (AggregateRepository.handleAlongside): `before` it and `after` it; `command` may be a function of
   * the invocation's state after `before`. Observed as the invocation's state after them.
   */
  | { readonly type: 'WithAccount'; readonly command: AccountCommand | ((invocation: InvocationState) => AccountCommand); readonly before: readonly LifecycleStep[]; readonly after: readonly LifecycleStep[] }
  /** Tell the caller the invocation exists (`RunOperationRequest.onEstimated`). */
  | { readonly type: 'AnnounceEstimated' }
  /** A cancellation recorded before the conversation began: the conversation ends before sending anything. */
  | { readonly type: 'StopBeforeStart'; readonly cancellation: CancellationReason }
  /** The bounded conversation; each of its attempts is appended as it happens (RecordAttempt). */
  | { readonly type: 'Converse'; readonly conversation: PreparedConversation; readonly publication: Publication; readonly dispatchedAtMs: number }
  /** Something escaped the protected block around the conversation: it is logged, then settled by transition 11. */
  | { readonly type: 'ReportEscape'; readonly error: unknown }
  | LastStep;

/** The steps that end the run. */
export type LastStep =
  /** The key's first request is in the log: the repeat answers with its result (KeyedRepeats.afterFirst). */
  | { readonly type: 'AnswerAsRepeat'; readonly first: InvocationState }
  | { readonly type: 'Refused'; readonly result: InvocationSummary }
  /** Settled and its hold released; `answer` when the conversation completed. */
  | { readonly type: 'Settled'; readonly result: InvocationSummary; readonly answer?: unknown }
  | { readonly type: 'Fail'; readonly error: unknown };

/** What the handler observed executing a step. */
export type Observation =
  | { readonly type: 'InvocationRead'; readonly state: InvocationState; readonly revision: bigint | undefined }
  | { readonly type: 'Prepared'; readonly conversation: PreparedConversation }
  | { readonly type: 'PublicationRead'; readonly operation: OperationState }
  | { readonly type: 'AccountRead'; readonly account: AccountState }
  /** The invocation's state after the append. */
  | { readonly type: 'Invoked'; readonly state: InvocationState }
  | { readonly type: 'AccountChanged' }
  /** A step with nothing to report (announce, stop, report) was done. */
  | { readonly type: 'Done' }
  | { readonly type: 'Conversed'; readonly result: ToolLoopResult }
  | { readonly type: 'Threw'; readonly error: unknown };

/** An observation with the instant (ISO-8601, the handler's clock) it was made: the time of what follows. */
export type RunInput = Observation & { readonly at: string };

type Admission = { readonly admitted: true; readonly publication: Publication } | { readonly admitted: false; readonly refusal: AdmissionRefusal };

/** A phase of the run with what it carries to the steps after (one member per phase). */
type InPhase<P extends string, Carried = unknown> = P extends string ? { readonly facts: RunFacts; readonly phase: P } & Carried : never;
type Conversation = { readonly conversation: PreparedConversation };

/** Where the run is, and what it carries to the steps after. */
export type RunState =
  | InPhase<'reading_first' | 'rereading_first' | 'preparing' | 'refusing' | 'conversing' | 'reporting' | 'settling_by_exception' | 'over'>
  | InPhase<'reading_publication', Conversation>
  | InPhase<'admitting', Conversation & { readonly publication: Publication | undefined; readonly cached: boolean }>
  | InPhase<'estimating' | 'announcing', Conversation & { readonly admission: Admission }>
  | InPhase<'holding' | 'stopping', Conversation & { readonly publication: Publication; readonly dispatchedAt: string }>
  | InPhase<'closing', { readonly answer: unknown }>
  | InPhase<'settling_hold', { readonly settled: InvocationState; readonly answer: unknown }>;

/** A phase's state without the facts, which every phase carries unchanged. */
type Then = RunState extends infer S ? (S extends RunState ? Omit<S, 'facts'> : never) : never;

export type RunPhase = RunState['phase'];

export interface RunDecision {
  readonly state: RunState;
  readonly step: RunStep;
}

/** The first step: a keyed request looks for its key's first request, an unkeyed one prepares. */
export function startRun(facts: RunFacts): RunDecision {
  if (facts.idempotencyKey !== undefined) return { state: { facts, phase: 'reading_first' }, step: { type: 'ReadInvocation' } };
  return { state: { facts, phase: 'preparing' }, step: { type: 'Prepare' } };
}

/** The step after `input`, and what the run knows then. An input the phase does not expect is a bug. */
export function decideRun(state: RunState, input: RunInput): RunDecision {
  // Only the two appends around the conversation are protected (transition 11); any other failure
  // leaves the invocation where it stands (the sweep settles it) and goes to the caller.
  if (input.type === 'Threw' && !recovers(state, input.error)) return fail(state, input.error);
  switch (state.phase) {
    case 'reading_first':
    case 'rereading_first':
      return afterFirstRead(state, expect(state, input, 'InvocationRead'));
    case 'preparing':
      return next(state, { phase: 'reading_publication', conversation: expect(state, input, 'Prepared').conversation }, { type: 'ReadPublication' });
    case 'reading_publication': {
      const publication = publicationInForce(expect(state, input, 'PublicationRead').operation);
      return next(state, { phase: 'admitting', conversation: state.conversation, publication, cached: true }, { type: 'ReadAccount', cached: true });
    }
    case 'admitting':
      return admitting(state, expect(state, input, 'AccountRead').account, input.at);
    case 'estimating':
      return estimating(state, input);
    case 'announcing':
      expect(state, input, 'Done');
      return afterAnnounce(state, input.at);
    case 'refusing':
      return last(state, { type: 'Refused', result: invocationSummary(expect(state, input, 'Invoked').state) });
    case 'holding':
      return holding(state, input);
    case 'stopping':
      expect(state, input, 'Done');
      return converse(state);
    case 'conversing':
    case 'closing':
      return input.type === 'Threw' ? next(state, { phase: 'reporting' }, { type: 'ReportEscape', error: input.error }) : closing(state, input);
    case 'reporting':
      expect(state, input, 'Done');
      // docs/lifecycle.md transition 11: the real cost is unknown.
      return next(state, { phase: 'settling_by_exception' }, { type: 'InvokeAll', steps: settlement({ by: 'exception', settledAt: input.at }) });
    case 'settling_by_exception':
      return settlingHold(state, expect(state, input, 'Invoked').state, undefined, input.at);
    case 'settling_hold':
      expect(state, input, 'AccountChanged');
      return last(state, { type: 'Settled', result: invocationSummary(state.settled), ...(state.answer === undefined ? {} : { answer: state.answer }) });
    case 'over':
      throw new Error('the run is over: no step follows its last');
  }
}

/** Failures a phase turns into a next step instead of ending the run with them. */
function recovers(state: RunState, error: unknown): boolean {
  switch (state.phase) {
    case 'estimating':
      // Another process estimated the same keyed request first: answer with its result.
      return error instanceof IllegalTransitionError && state.facts.idempotencyKey !== undefined;
    case 'holding':
      // The account, deciding on its own stream, refused the hold: recorded as a refusal.
      return error instanceof AdmissionRefusedError;
    case 'conversing':
    case 'closing':
      return true;
    default:
      return false;
  }
}

function afterFirstRead(state: RunState, read: Extract<RunInput, { type: 'InvocationRead' }>): RunDecision {
  if (state.phase === 'rereading_first' || read.revision !== undefined) return last(state, { type: 'AnswerAsRepeat', first: read.state });
  return next(state, { phase: 'preparing' }, { type: 'Prepare' });
}

/**
 * Admitted on the cached account: PlaceHold's expected revision re-checks it. A refusal or an unknown
 * organization is only concluded from the stream as read (another process may have granted).
 */
function admitting(state: Extract<RunState, { phase: 'admitting' }>, account: AccountState, at: string): RunDecision {
  const decision = decideAdmission(account, state.publication);
  if (state.cached && (!account.exists || !decision.admitted)) {
    return next(state, { ...state, cached: false }, { type: 'ReadAccount', cached: false });
  }
  if (!account.exists) return fail(state, new UnknownOrganizationError(state.facts.organizationId));
  const admission: Admission = decision.admitted ? { admitted: true, publication: state.publication as Publication } : { admitted: false, refusal: refusalOf(decision) };
  const { invocationId, operationId, organizationId, idempotencyKey, fingerprint, ownerLeaseId } = state.facts;
  const command = estimate(
    {
      invocationId,
      operationId,
      organizationId,
      publication: state.publication ?? null,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
      ...(fingerprint === undefined ? {} : { requestFingerprint: fingerprint }),
      ...(ownerLeaseId === undefined ? {} : { ownerLeaseId }),
    },
    at,
  );
  return next(state, { phase: 'estimating', conversation: state.conversation, admission }, { type: 'Invoke', command });
}

function estimating(state: Extract<RunState, { phase: 'estimating' }>, input: RunInput): RunDecision {
  if (input.type === 'Threw') return next(state, { phase: 'rereading_first' }, { type: 'ReadInvocation' });
  expect(state, input, 'Invoked');
  return next(state, { ...state, phase: 'announcing' }, { type: 'AnnounceEstimated' });
}

function afterAnnounce(state: Extract<RunState, { phase: 'announcing' }>, at: string): RunDecision {
  const { admission } = state;
  if (!admission.admitted) return refuse(state, admission.refusal, at);
  // The request was captured by `prepare`: the hold, the reservation and the dispatch commit together.
  const command = placeHold(state.facts.invocationId, admission.publication.creditHold, at);
  const then: Then = { phase: 'holding', conversation: state.conversation, publication: admission.publication, dispatchedAt: at };
  return next(state, then, { type: 'WithAccount', command, before: [], after: reserveAndDispatch(at) });
}

function refuse(state: RunState, refusal: AdmissionRefusal, at: string): RunDecision {
  return next(state, { phase: 'refusing' }, { type: 'Invoke', command: refuseEstimate(refusal, at) });
}

function holding(state: Extract<RunState, { phase: 'holding' }>, input: RunInput): RunDecision {
  if (input.type === 'Threw') return refuse(state, (input.error as AdmissionRefusedError).refusal, input.at);
  const dispatched = expect(state, input, 'Invoked').state;
  // Asked to stop before the conversation began (the stream says so): it ends at step 1, sending nothing.
  if (dispatched.cancellation !== undefined) {
    return next(state, { ...state, phase: 'stopping' }, { type: 'StopBeforeStart', cancellation: dispatched.cancellation });
  }
  return converse(state);
}

function converse(state: Extract<RunState, { phase: 'holding' | 'stopping' }>): RunDecision {
  // The time budget runs from the recorded dispatch, the instant a sweep measures it from.
  const step: RunStep = { type: 'Converse', conversation: state.conversation, publication: state.publication, dispatchedAtMs: Date.parse(state.dispatchedAt) };
  return next(state, { phase: 'conversing' }, step);
}

/**
 * Records how the conversation ended and settles it (transitions 5/6, then 7, then 8/9/10), and
 * settles the account's hold at that charge, in one commit: no crash can leave a result unsettled,
 * or a settlement with its hold still open.
 */
function closing(state: RunState, input: RunInput): RunDecision {
  if (state.phase === 'closing') {
    const settled = expect(state, input, 'Invoked').state;
    return last(state, { type: 'Settled', result: invocationSummary(settled), ...(state.answer === undefined ? {} : { answer: state.answer }) });
  }
  const { result } = expect(state, input, 'Conversed');
  const answer = result.outcome === 'completed' ? result.answer : undefined;
  const { invocationId } = state.facts;
  const at = input.at;
  return next(state, { phase: 'closing', answer }, { type: 'WithAccount', command: (settled) => settleHold(invocationId, settled, at), before: closeAndSettle(result, at), after: [] });
}

/** Releases the hold and the slot and charges the settled amount (docs/lifecycle.md step 9). */
function settlingHold(state: RunState, settled: InvocationState, answer: unknown, at: string): RunDecision {
  return next(state, { phase: 'settling_hold', settled, answer }, { type: 'OnAccount', command: settleHold(state.facts.invocationId, settled, at) });
}

function next(state: RunState, then: Then, step: RunStep): RunDecision {
  return { state: { ...then, facts: state.facts } as RunState, step };
}

function last(state: RunState, step: LastStep): RunDecision {
  return { state: { facts: state.facts, phase: 'over' }, step };
}

function fail(state: RunState, error: unknown): RunDecision {
  return last(state, { type: 'Fail', error });
}

function expect<T extends Observation['type']>(state: RunState, input: RunInput, type: T): Extract<RunInput, { type: T }> {
  if (input.type !== type) throw new Error(`the run in phase ${state.phase} expected ${type}, observed ${input.type}`);
  return input as Extract<RunInput, { type: T }>;
}
