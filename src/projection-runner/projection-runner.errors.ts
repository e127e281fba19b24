/** A projection's `apply` threw: nothing of its batch was committed, its checkpoint stayed where it was. */
export class ProjectionApplyError extends Error {
  override readonly name = 'ProjectionApplyError';

  constructor(
    readonly projection: string,
    readonly position: bigint,
    readonly eventType: string,
    override readonly cause: unknown,
  ) {
    super(
      `Projection "${projection}" failed on event ${eventType} at position ${position}: ${messageOf(cause)}`,
    );
  }
}

/** A document a projection wrote cannot be stored (bad collection or id, not JSON, too large). */
export class DocumentWriteError extends Error {
  override readonly name = 'DocumentWriteError';

  constructor(
    readonly projection: string,
    readonly collection: string,
    readonly id: string,
    reason: string,
  ) {
    super(`Projection "${projection}" cannot write ${describeKey(collection, id)}: ${reason}`);
  }
}

/**
 * The stored checkpoint is not the one this writer last committed: another runner writes the same
 * read-model file. Applying on top of it would apply events twice, so the batch is refused.
 */
export class ReadModelConflictError extends Error {
  override readonly name = 'ReadModelConflictError';

  constructor(
    readonly projection: string,
    readonly expected: bigint | undefined,
    readonly actual: bigint | undefined,
  ) {
    super(
      `Projection "${projection}": stored checkpoint is ${String(actual ?? 'none')}, expected ` +
        `${String(expected ?? 'none')}; is another runner writing this read model?`,
    );
  }
}

/** A projection stopped on an error; waiting for it to reach a position can never succeed. */
export class ProjectionFaultedError extends Error {
  override readonly name = 'ProjectionFaultedError';
  readonly code = 'read_models_unavailable';

  constructor(
    readonly projection: string,
    override readonly cause: unknown,
  ) {
    super(`Projection "${projection}" is stopped by an error: ${messageOf(cause)}`);
  }
}

/** The runner stopped (or failed) before the awaited position was reached. */
export class ProjectionRunnerStoppedError extends Error {
  override readonly name = 'ProjectionRunnerStoppedError';
  readonly code = 'read_models_unavailable';

  constructor(reason: string) {
    super(`Projection runner stopped: ${reason}`);
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function describeKey(collection: string, id: string): string {
  const shown = (value: string): string => JSON.stringify(String(value).slice(0, 80));
  return `document ${shown(collection)}/${shown(id)}`;
}
