/**
 * Errors a decider throws instead of emitting events. Each has a machine `code` the transport maps to
 * a status without reading messages: `validation_failed` → 400; `illegal_transition`,
 * `idempotency_conflict` and `admission_refused` → 409.
 */
export type DomainErrorCode = 'validation_failed' | 'illegal_transition' | 'idempotency_conflict' | 'admission_refused';

export abstract class DomainError extends Error {
  protected constructor(
    readonly code: DomainErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** One thing wrong with one input field, named by its dotted path (e.g. `limits.maxTurns`). */
export interface FieldIssue {
  readonly field: string;
  readonly message: string;
}

/**
 * Bad input: every problem found is in `issues`; `field` and `message` repeat the first one, for
 * callers that report a single field.
 */
export class ValidationError extends DomainError {
  override readonly name = 'ValidationError';
  readonly field: string;
  readonly issues: readonly FieldIssue[];

  constructor(issues: readonly FieldIssue[]) {
    if (issues.length === 0) throw new TypeError('ValidationError needs at least one issue');
    super('validation_failed', issues.map((issue) => `${issue.field}: ${issue.message}`).join('; '));
    this.issues = issues;
    this.field = issues[0]!.field;
  }

  static of(field: string, message: string): ValidationError {
    return new ValidationError([{ field, message }]);
  }
}

/**
 * A command the aggregate's current state does not allow (e.g. settling twice). `guard` says why when
 * the state allows the command in general but not in this case.
 */
export class IllegalTransitionError extends DomainError {
  override readonly name = 'IllegalTransitionError';

  constructor(
    readonly state: string,
    readonly command: string,
    readonly guard?: string,
  ) {
    super('illegal_transition', `${command} is not allowed in state ${state}${guard === undefined ? '' : `: ${guard}`}`);
  }
}

/** An idempotency key (or a hold's invocation id) reused for a different request. */
export class IdempotencyConflictError extends DomainError {
  override readonly name = 'IdempotencyConflictError';

  constructor(
    readonly key: string,
    message: string,
  ) {
    super('idempotency_conflict', message);
  }
}
