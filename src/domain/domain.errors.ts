/**
 * The machine code of every error the ledger's commands and queries throw for a reason of the domain
 * (bad input, an unknown name, a state that does not allow the command). A transport maps the code to
 * its own status (the HTTP API's table is in src/http-kit/http-error.filter.ts) without reading messages
 * or testing classes.
 */
export const DOMAIN_ERROR_CODES = [
  'validation_failed',
  'invalid_feature_input',
  'unknown_operation',
  'unknown_invocation',
  'unknown_organization',
  'illegal_transition',
  'admission_refused',
  'idempotency_conflict',
  'idempotency_key_reused',
  'keyed_request_in_progress',
  'unknown_gateway_key',
  'unknown_gateway_model',
  'unknown_gateway_team',
] as const;
export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

/** One thing wrong with one input field, named by its dotted path (e.g. `limits.maxTurns`). */
export interface FieldIssue {
  readonly field: string;
  readonly message: string;
}

export abstract class DomainError extends Error {
  /** The input fields at fault, each with what is wrong with it; empty when no field is. */
  readonly issues: readonly FieldIssue[];

  protected constructor(
    readonly code: DomainErrorCode,
    message: string,
    issues: readonly FieldIssue[] = [],
  ) {
    super(message);
    this.issues = issues;
  }
}

/**
 * Bad input: every problem found is in `issues`; `field` and `message` repeat the first one, for
 * callers that report a single field.
 */
export class ValidationError extends DomainError {
  override readonly name = 'ValidationError';
  readonly field: string;

  constructor(issues: readonly FieldIssue[]) {
    if (issues.length === 0) throw new TypeError('ValidationError needs at least one issue');
    super('validation_failed', issues.map((issue) => `${issue.field}: ${issue.message}`).join('; '), issues);
    this.field = issues[0]!.field;
  }

  static of(field: string, message: string): ValidationError {
    return new ValidationError([{ field, message }]);
  }
}

/** What each command does, as a caller would ask for it: `Cannot cancel this invocation: …`. */
const COMMAND_WORDS: Readonly<Record<string, { readonly action: string; readonly subject: string }>> = {
  EstimateInvocation: { action: 'estimate', subject: 'invocation' },
  RefuseInvocation: { action: 'refuse', subject: 'invocation' },
  ReserveInvocation: { action: 'reserve credits for', subject: 'invocation' },
  DispatchInvocation: { action: 'dispatch', subject: 'invocation' },
  RecordAttempt: { action: 'record an attempt of', subject: 'invocation' },
  CompleteInvocation: { action: 'complete', subject: 'invocation' },
  FailInvocation: { action: 'fail', subject: 'invocation' },
  MarkInvocationPending: { action: 'mark as pending', subject: 'invocation' },
  SettleInvocation: { action: 'settle', subject: 'invocation' },
  RequestCancellation: { action: 'cancel', subject: 'invocation' },
  SetAlertThresholds: { action: 'set the alert thresholds of', subject: 'organization' },
  CreateGatewayTeam: { action: 'create a team for', subject: 'organization' },
  DeleteGatewayTeam: { action: 'delete', subject: 'team' },
};

/** Where the aggregate stands, as the reason a command cannot apply (docs/lifecycle.md's states). */
const STATE_WORDS: Readonly<Record<string, string>> = {
  initial: 'it does not exist yet',
  estimated: 'it is awaiting admission',
  reserved: 'its credits are held but it is not dispatched yet',
  dispatched: 'it is in flight',
  completed: 'its conversation has completed, and only settlement is left',
  failed: 'its conversation has failed, and only settlement is left',
  pending: 'its conversation has completed, and only settlement is left',
  settled: 'it is already settled',
  refused: 'it was refused',
  'no account': 'it has no account',
  'team with live keys': 'live keys still name it',
};

/** `Cannot cancel this invocation: it is already settled.` — the message of an IllegalTransitionError. */
export function illegalTransitionMessage(state: string, command: string, guard?: string): string {
  const words = COMMAND_WORDS[command] ?? { action: `apply ${command} to`, subject: 'invocation' };
  const why = STATE_WORDS[state] ?? `it is ${state}`;
  return `Cannot ${words.action} this ${words.subject}: ${why}${guard === undefined ? '' : ` — ${guard}`}.`;
}

/**
 * A command the aggregate's current state does not allow (e.g. settling twice). `guard` says why when
 * the state allows the command in general but not in this case. `state` and `command` stay machine
 * names for callers; the message is for people.
 */
export class IllegalTransitionError extends DomainError {
  override readonly name = 'IllegalTransitionError';

  constructor(
    readonly state: string,
    readonly command: string,
    readonly guard?: string,
  ) {
    super('illegal_transition', illegalTransitionMessage(state, command, guard));
  }
}

/** An idempotency key (or a hold's invocation id) reused for a different request. */
export class IdempotencyConflictError extends DomainError {
  override readonly name = 'IdempotencyConflictError';

  constructor(
    readonly key: string,
    message: string,
  ) {
    super('idempotency_conflict', message, [{ field: 'idempotencyKey', message: 'was used for another request' }]);
  }
}
