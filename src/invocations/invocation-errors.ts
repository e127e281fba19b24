/** No feature is registered for the operation: there is nothing to run, and nothing is written. */
export class UnknownOperationError extends Error {
  override readonly name = 'UnknownOperationError';

  constructor(readonly operationId: string) {
    super(`Unknown operation "${operationId}"`);
  }
}

/** No invocation has this id (or, for a caller limited to one organization, not one of its own). */
export class UnknownInvocationError extends Error {
  override readonly name = 'UnknownInvocationError';

  constructor(readonly invocationId: string) {
    super(`Unknown invocation "${invocationId}"`);
  }
}

/** The organization has no account (no grant or settings yet): nothing is written. */
export class UnknownOrganizationError extends Error {
  override readonly name = 'UnknownOrganizationError';

  constructor(readonly organizationId: string) {
    super(`Unknown organization "${organizationId}"`);
  }
}

/** An idempotency key reused for a different request: another operation, or another input (SPEC §10). */
export class IdempotencyKeyReusedError extends Error {
  override readonly name = 'IdempotencyKeyReusedError';

  constructor(
    readonly idempotencyKey: string,
    readonly differs: 'operation' | 'input',
  ) {
    super(`Idempotency key "${idempotencyKey}" was already used for a request with another ${differs}`);
  }
}
