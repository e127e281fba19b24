import { DomainError } from '../domain/domain.errors';

/** No feature is registered for the operation: there is nothing to run, and nothing is written. */
export class UnknownOperationError extends DomainError {
  override readonly name = 'UnknownOperationError';

  constructor(readonly operationId: string) {
    super('unknown_operation', `operation "${operationId}" was not found`);
  }
}

/** No invocation has this id (or, for a caller limited to one organization, not one of its own). */
export class UnknownInvocationError extends DomainError {
  override readonly name = 'UnknownInvocationError';

  constructor(readonly invocationId: string) {
    super('unknown_invocation', `invocation "${invocationId}" was not found`);
  }
}

/** The organization has no account (no grant or settings yet): nothing is written. */
export class UnknownOrganizationError extends DomainError {
  override readonly name = 'UnknownOrganizationError';

  constructor(readonly organizationId: string) {
    super('unknown_organization', `organization "${organizationId}" was not found`);
  }
}

/**
 * A keyed repeat waited MAX_KEYED_REPEAT_WAIT_MS for the key's first request, running in another
 * process, and it had still not settled. Nothing was written; a later repeat gets the first's result.
 */
export class KeyedRequestInProgressError extends DomainError {
  override readonly name = 'KeyedRequestInProgressError';

  constructor(
    readonly idempotencyKey: string,
    readonly waitedMs: number,
  ) {
    super(
      'keyed_request_in_progress',
      `the first request with idempotency key "${idempotencyKey}" is still running after ${waitedMs} ms; repeat the request later for its result`,
      [{ field: 'idempotencyKey', message: 'its first request is still running' }],
    );
  }
}

/**
 * An idempotency key reused for a different request: another operation, or another input
 * (docs/http.md "Idempotency keys").
 */
export class IdempotencyKeyReusedError extends DomainError {
  override readonly name = 'IdempotencyKeyReusedError';

  constructor(
    readonly idempotencyKey: string,
    readonly differs: 'operation' | 'input',
  ) {
    super(
      'idempotency_key_reused',
      `Idempotency key "${idempotencyKey}" was already used for a request with another ${differs}`,
      [{ field: 'idempotencyKey', message: 'was used for another request' }],
    );
  }
}
