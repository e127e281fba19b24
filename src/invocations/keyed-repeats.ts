import { Inject, Injectable, Logger } from '@nestjs/common';
import { ANSWER_STORE, type AnswerStore } from '../answer-store/answer-store.port';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { CLOCK } from '../domain/clock.token';
import type { OperationFeature } from '../features/operation-feature';
import type { Clock } from '../runtime';
import { invocationDecider } from './invocation.decider';
import { invocationStreamName } from './invocation.events';
import { invocationSummary, type InvocationState } from './invocation.state';
import type { InvocationResult } from './invocation-result';
import { IdempotencyKeyReusedError, KeyedRequestInProgressError } from './invocation-errors';
import { InvocationEndings, MAX_KEYED_REPEAT_WAIT_MS } from './invocation-endings';
import { IDEMPOTENCY_SECRET, requestFingerprint } from './request-fingerprint';
import type { RunOperationRequest } from './run-operation.command';

/** A keyed request running in this process. */
interface InFlightRequest {
  readonly operationId: string;
  readonly fingerprint: string;
  readonly run: Promise<InvocationResult>;
  /** Resolves once the first's stream exists, so an async repeat (onEstimated) answers then. */
  readonly estimated: Promise<void>;
}

/**
 * Repeats of an idempotency key (docs/http.md "Idempotency keys"): a repeat while the first request
 * runs in this process joins it; one whose first request is in the log waits for it to settle and
 * answers with its result; another request under the same key is refused. Never runs a request twice.
 */
@Injectable()
export class KeyedRepeats {
  private readonly logger = new Logger(KeyedRepeats.name);
  /** Keyed requests running in this process, so a repeat waits for the first instead of racing it. */
  // A repeat that joins shares the first's promise, and so its answer (docs/embedding.md "The answer").
  private readonly inFlight = new Map<string, InFlightRequest>();

  constructor(
    private readonly repository: AggregateRepository,
    @Inject(ANSWER_STORE) private readonly answers: AnswerStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(IDEMPOTENCY_SECRET) private readonly idempotencySecret: Buffer,
    private readonly endings: InvocationEndings,
  ) {}

  /**
   * Runs a keyed request through `run` (given the request to run and its fingerprint), unless the
   * key's first request still runs here: then the repeat gets the first's result, if it is the same
   * request.
   */
  join(
    invocationId: string,
    request: RunOperationRequest,
    run: (request: RunOperationRequest, fingerprint: string) => Promise<InvocationResult>,
  ): Promise<InvocationResult> {
    const fingerprint = requestFingerprint(this.idempotencySecret, request.operationId, request.input);
    const running = this.inFlight.get(invocationId);
    if (running !== undefined) {
      const differs = differenceOf(running, request.operationId, fingerprint);
      if (differs !== undefined) return Promise.reject(new IdempotencyKeyReusedError(request.idempotencyKey ?? '', differs));
      void running.estimated.then(() => request.onEstimated?.(invocationId));
      return running.run;
    }
    let markEstimated!: () => void;
    const estimated = new Promise<void>((resolve) => (markEstimated = resolve));
    const onEstimated = (id: string): void => {
      markEstimated();
      request.onEstimated?.(id);
    };
    const first = run({ ...request, onEstimated }, fingerprint);
    this.inFlight.set(invocationId, { operationId: request.operationId, fingerprint, run: first, estimated });
    return first.finally(() => this.inFlight.delete(invocationId));
  }

  /**
   * A keyed repeat whose first request is in the log but runs elsewhere (another process on the same
   * store; this process's own runs are joined in `join`): waits for the first to settle, observing
   * the log, at most MAX_KEYED_REPEAT_WAIT_MS by the clock, then answers with its result (docs/http.md
   * "Idempotency keys": a concurrent repeat waits for the first). Never runs the request a second time,
   * never answers with a result the first has not reached yet.
   */
  async afterFirst(
    invocationId: string,
    first: InvocationState,
    request: RunOperationRequest,
    feature: OperationFeature,
    fingerprint: string | undefined,
  ): Promise<InvocationResult> {
    if (isFinal(first)) return this.repeatOf(first, request, feature, fingerprint);
    // Another request with the same key is refused at once, not after the wait.
    const differs = differenceOf({ operationId: first.operationId, fingerprint: first.requestFingerprint }, request.operationId, fingerprint);
    if (differs !== undefined) throw new IdempotencyKeyReusedError(request.idempotencyKey ?? '', differs);
    request.onEstimated?.(invocationId);
    const stream = invocationStreamName(invocationId);
    // Registered before the stream is read again: an ending committed before this read is in it, and
    // any later one reaches the watch.
    const watch = this.endings.watch(invocationId);
    let cancelTimer: (() => void) | undefined;
    try {
      let current = (await this.repository.load(stream, invocationDecider)).state;
      if (!isFinal(current)) {
        const timedOut = new Promise<'timed_out'>((resolve) => (cancelTimer = this.clock.setTimer(MAX_KEYED_REPEAT_WAIT_MS, () => resolve('timed_out'))));
        if ((await Promise.race([watch.ended.then(() => 'ended' as const), timedOut])) === 'timed_out') {
          throw new KeyedRequestInProgressError(request.idempotencyKey ?? '', MAX_KEYED_REPEAT_WAIT_MS);
        }
        current = (await this.repository.load(stream, invocationDecider)).state;
      }
      return this.repeatOf(current, request, feature, fingerprint);
    } finally {
      cancelTimer?.();
      watch.stop();
    }
  }

  /** For keyed repeats after settlement, when the feature asked for it; losing it costs only the repeat's answer. */
  keepAnswer(invocationId: string, answer: unknown, feature: OperationFeature): void {
    if (feature.answerRetentionMs === undefined) return;
    try {
      this.answers.keep(invocationId, answer, feature.answerRetentionMs);
    } catch (error) {
      this.logger.warn({ message: 'the answer could not be kept for repeats', invocationId, error: describe(error) });
    }
  }

  /**
   * The first request's result for a repeat of its key, from the log (another process may have run
   * it), with its answer when the feature keeps answers; refused when the key's first request had
   * another operation or input.
   */
  private repeatOf(first: InvocationState, request: RunOperationRequest, feature: OperationFeature, fingerprint: string | undefined): InvocationResult {
    const differs = differenceOf({ operationId: first.operationId, fingerprint: first.requestFingerprint }, request.operationId, fingerprint);
    if (differs !== undefined) throw new IdempotencyKeyReusedError(request.idempotencyKey ?? '', differs);
    const summary = invocationSummary(first);
    if (summary.outcome !== 'completed') return summary;
    if (feature.answerRetentionMs === undefined) return { ...summary, answerUnavailable: 'not_retained' };
    const kept = first.invocationId === undefined ? undefined : this.answers.find(first.invocationId);
    return kept === undefined ? { ...summary, answerUnavailable: 'expired' } : { ...summary, answer: kept.answer };
  }
}

/**
 * How a keyed request differs from the key's first one. A first request recorded before fingerprints
 * existed carries none: only its operation can be compared.
 */
export function differenceOf(
  first: { readonly operationId: string | undefined; readonly fingerprint: string | undefined },
  operationId: string,
  fingerprint: string | undefined,
): 'operation' | 'input' | undefined {
  if (first.operationId !== operationId) return 'operation';
  if (first.fingerprint !== undefined && first.fingerprint !== fingerprint) return 'input';
  return undefined;
}

/** Refused or settled: the invocation has its result, and nothing more happens to it. */
function isFinal(state: InvocationState): boolean {
  return state.status === 'settled' || state.status === 'refused';
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
