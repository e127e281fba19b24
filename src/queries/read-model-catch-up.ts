import { LiveProjections } from '../projection-runner';

/** Longest an in-process query waits for its read models to reach the log's head, in ms. */
export const QUERY_CATCH_UP_TIMEOUT_MS = 5_000;

/** The read models a query needs did not catch up with the log in time (or are not installed). */
export class ReadModelsUnavailableError extends Error {
  override readonly name = 'ReadModelsUnavailableError';
  readonly code = 'read_models_unavailable';
}

/**
 * Waits until `projections` have applied the log up to its head as of the call, so a query answers
 * with the caller's own writes (docs/embedding.md), and throws ReadModelsUnavailableError past the timeout.
 */
export async function catchUp(runner: LiveProjections, projections: readonly string[]): Promise<void> {
  const installed = new Set(runner.status().projections.map((status) => status.name));
  const missing = projections.find((name) => !installed.has(name));
  if (missing !== undefined) throw new ReadModelsUnavailableError(`projection "${missing}" is not installed`);
  try {
    await runner.caughtUp({ projections, signal: AbortSignal.timeout(QUERY_CATCH_UP_TIMEOUT_MS) });
  } catch (error) {
    if (error instanceof DOMException && error.name === 'TimeoutError') {
      throw new ReadModelsUnavailableError(`they did not catch up within ${QUERY_CATCH_UP_TIMEOUT_MS} ms`);
    }
    throw error;
  }
}
