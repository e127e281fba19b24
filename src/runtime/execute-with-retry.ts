/**
 * One turn's provider request with retries (docs/rules.md step 4; BR-CAP-PFM-LLM-002-05/06/07).
 *
 * Every attempt is raced against a timer on the injected clock set to
 * `min(attemptTimeoutMs, time left before the deadline)`; when the timer wins, the provider's signal is
 * aborted with a `TimeoutError` reason (a caller's cancellation aborts it with the caller's reason) and the
 * attempt is recorded as `timeout`, `timedOut: true`, whatever the provider does afterwards. Every attempt is reported, in order, before the next one starts.
 */
import { Stopper, timeoutReason, type Clock } from './clock';
import type { AttemptRecord, Prices } from './conversation.types';
import { ProviderFault, type FaultClass } from './faults';
import { priceAttempt } from './pricing';
import type { Provider, ProviderRequest, ProviderResponse, SendOptions } from './provider.port';
import { decideRetry, type RandomSource } from './retry-policy';

export interface ExecuteWithRetryInput {
  readonly provider: Provider;
  readonly request: ProviderRequest;
  readonly clock: Clock;
  /** 1-based turn number for the attempt records. */
  readonly turn: number;
  /** Absolute clock time (ms) of the conversation deadline; no attempt or wait runs past it. */
  readonly deadlineMs: number;
  readonly attemptTimeoutMs: number;
  readonly maxAttemptsPerTurn: number;
  readonly prices: Prices;
  readonly random: RandomSource;
  /** The caller's cancellation. */
  readonly signal?: AbortSignal;
  /** Awaited for every attempt, in order, before anything else happens. */
  readonly report: (record: AttemptRecord) => void | Promise<void>;
}

/** How a turn's request ended. `fault` is the last attempt's classification, when there was a fault. */
export type TurnExecution =
  | { readonly ok: true; readonly response: ProviderResponse }
  | { readonly ok: false; readonly ending: 'failed' | 'time_limit' | 'cancelled'; readonly fault?: FaultClass };

type AttemptResult =
  | { readonly ok: true; readonly response: ProviderResponse }
  | { readonly ok: false; readonly fault: ProviderFault; readonly timedOut: boolean };

/**
 * One attempt's options. The signal is created only if the provider reads it (a real adapter does; a
 * script may not): an AbortSignal costs more than the rest of a turn. It is a getter on the prototype,
 * so a provider must read `options.signal` rather than spread the options (a spread would drop it).
 */
class AttemptOptions implements SendOptions {
  readonly stopper = new Stopper<'timeout' | 'cancelled'>();

  constructor(readonly timeoutMs: number) {}

  get signal(): AbortSignal {
    return this.stopper.signal;
  }
}

/** Our own stop decides the class: a provider may map an abort to anything, or ignore it. */
function attemptFailure(error: unknown, cause: 'timeout' | 'cancelled' | undefined): AttemptResult {
  const details = error instanceof ProviderFault ? error.details : {};
  if (cause === 'timeout') {
    return { ok: false, timedOut: true, fault: new ProviderFault('timeout', 'provider attempt timed out', { ...details, timedOut: true }) };
  }
  if (cause === 'cancelled') {
    return { ok: false, timedOut: false, fault: new ProviderFault('cancelled', 'provider attempt cancelled', details) };
  }
  // The port promises ProviderFault only; anything else is a bug in an adapter and must not be
  // mistaken for a classified (and maybe retryable) fault.
  if (!(error instanceof ProviderFault)) throw error;
  return { ok: false, timedOut: error.details.timedOut === true, fault: error };
}

/** Sends one attempt, raced against its timeout and the caller's cancellation. */
function attemptOnce(
  provider: Provider,
  request: ProviderRequest,
  clock: Clock,
  timeoutMs: number,
  cancel: AbortSignal | undefined,
): Promise<AttemptResult> {
  const options = new AttemptOptions(timeoutMs);
  const stopper = options.stopper;
  const onCancel = cancel === undefined ? undefined : (): void => stopper.stop('cancelled', cancel.reason);
  if (onCancel !== undefined) {
    if (cancel!.aborted) onCancel();
    else cancel!.addEventListener('abort', onCancel, { once: true });
  }
  const cancelTimer = clock.setTimer(timeoutMs, () => stopper.stop('timeout', timeoutReason(`provider attempt exceeded ${timeoutMs} ms`)));
  const settle = (): void => {
    cancelTimer();
    if (onCancel !== undefined) cancel!.removeEventListener('abort', onCancel);
  };

  let sent: Promise<ProviderResponse>;
  try {
    sent = provider.send(request, options);
  } catch (error) {
    sent = Promise.reject(error);
  }
  return stopper.raceTo(
    sent,
    (response): AttemptResult => {
      settle();
      return { ok: true, response };
    },
    (error: unknown): AttemptResult => {
      settle();
      return attemptFailure(error, stopper.cause);
    },
  );
}

/**
 * Sends `request` until it succeeds, a permanent fault or the attempt budget ends it, the next attempt
 * cannot fit before the deadline (`time_limit`, the last fault kept), or the caller cancels.
 * Waits grow (see retry-policy.ts) and honour the fault's `retryAfterMs`.
 */
export async function executeWithRetry(input: ExecuteWithRetryInput): Promise<TurnExecution> {
  const { provider, request, clock, deadlineMs, signal } = input;
  let waitBeforeMs = 0;
  let lastFault: FaultClass | undefined;
  for (let retry = 0; ; retry++) {
    if (signal?.aborted) return { ok: false, ending: 'cancelled', fault: lastFault };
    const startedAtMs = clock.now();
    const remainingMs = deadlineMs - startedAtMs;
    if (remainingMs <= 0) return { ok: false, ending: 'time_limit', fault: lastFault };

    const result = await attemptOnce(provider, request, clock, Math.min(input.attemptTimeoutMs, remainingMs), signal);
    const durationMs = clock.now() - startedAtMs;
    const details = result.ok ? undefined : result.fault.details;
    const usage = result.ok ? result.response.usage : details?.usage;
    const record: AttemptRecord = {
      turn: input.turn,
      retry,
      startedAtMs,
      durationMs,
      waitBeforeMs,
      classification: result.ok ? 'ok' : result.fault.classification,
      timedOut: !result.ok && result.timedOut,
      httpStatus: result.ok ? result.response.httpStatus : details?.httpStatus,
      providerRequestId: result.ok ? result.response.providerRequestId : details?.providerRequestId,
      model: result.ok ? result.response.model : request.model,
      usage,
      priceCredits: priceAttempt(usage, input.prices),
    };
    const reported = input.report(record);
    if (reported !== undefined) await reported;
    if (result.ok) return result;

    const classification = result.fault.classification;
    lastFault = classification;
    if (classification === 'cancelled') return { ok: false, ending: 'cancelled', fault: classification };
    const decision = decideRetry(classification, retry + 1, input.maxAttemptsPerTurn, input.random, details?.retryAfterMs);
    if (!decision.retry) return { ok: false, ending: 'failed', fault: classification };
    // Never wait past the deadline: if the next attempt would start with no time left, stop now.
    if (clock.now() + decision.waitMs >= deadlineMs) return { ok: false, ending: 'time_limit', fault: classification };
    try {
      await clock.sleep(decision.waitMs, signal);
    } catch (error) {
      if (signal?.aborted) return { ok: false, ending: 'cancelled', fault: classification };
      throw error;
    }
    waitBeforeMs = decision.waitMs;
  }
}
