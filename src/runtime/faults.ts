/**
 * The closed set of provider fault classes (docs/rules.md rules 05–06). A fault is classified once, at
 * the edge (the provider adapter), and the rest of the code branches on this name, never on a
 * provider's text.
 */
export const FAULT_CLASSES = [
  'timeout',
  'rate_limited',
  'credit_exhausted',
  'overloaded',
  'server_error',
  'connection',
  'conflict',
  'malformed_request',
  'unauthorized',
  'cancelled',
] as const;

export type FaultClass = (typeof FAULT_CLASSES)[number];

const RETRYABLE: ReadonlySet<FaultClass> = new Set<FaultClass>([
  'timeout',
  'rate_limited',
  'overloaded',
  'server_error',
  'connection',
  'conflict',
]);

/** Whether a fault class is retried (docs/rules.md rule 05). */
export function isRetryable(fault: FaultClass): boolean {
  return RETRYABLE.has(fault);
}

export interface ProviderFaultDetails {
  readonly httpStatus?: number;
  readonly providerRequestId?: string;
  /** Server-requested wait before the next attempt (`retry-after-ms` / `retry-after`). */
  readonly retryAfterMs?: number;
  /** Usage the provider reported on the failed attempt, if any: billed failures are never lost. */
  readonly usage?: import('./provider.port').Usage;
  /** True when the attempt was ended by its own timeout (the attempt record says it ran out of time). */
  readonly timedOut?: boolean;
}

/** A classified provider failure; providers throw only this. Its message never carries secrets. */
export class ProviderFault extends Error {
  override readonly name = 'ProviderFault';

  constructor(
    readonly classification: FaultClass,
    message: string,
    readonly details: ProviderFaultDetails = {},
  ) {
    super(message);
  }

  get retryable(): boolean {
    return isRetryable(this.classification);
  }
}

/** Text in an error body that says the provider account itself is out of money (docs/rules.md rule 06). */
const DEPLETED_BALANCE = /credit balance is too low|insufficient[_ ]quota|billing|balance is (depleted|exhausted)|quota (exceeded|exhausted)|out of credits|insufficient credits/i;

export interface HttpFaultEvidence {
  readonly status: number;
  /** The provider's error type, e.g. Anthropic's `overloaded_error`, OpenAI's `insufficient_quota`. */
  readonly errorType?: string;
  /** The provider's error message text. */
  readonly message?: string;
}

/**
 * Maps an HTTP failure to its class (docs/rules.md rules 05–06). The depleted-balance check comes
 * first: a 429, 400, 402 or 403 that says the account is out of money is `credit_exhausted` and must
 * not be retried, because retrying it reads a purchase problem as load.
 */
export function classifyHttpFault({ status, errorType, message }: HttpFaultEvidence): FaultClass {
  const text = `${errorType ?? ''} ${message ?? ''}`;
  if ([400, 402, 403, 429].includes(status) && (status === 402 || errorType === 'billing_error' || DEPLETED_BALANCE.test(text))) {
    return 'credit_exhausted';
  }
  if (status === 529 || errorType === 'overloaded_error') return 'overloaded';
  if (status === 408) return 'timeout';
  if (status === 429) return 'rate_limited';
  if (status === 409) return 'conflict';
  if (status === 401 || status === 403) return 'unauthorized';
  if (status >= 500) return 'server_error';
  // 400, 404, 413, 422 and any other 4xx: the request itself is wrong; retrying cannot help.
  return 'malformed_request';
}
