import { Inject, Logger, Optional } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ANSWER_STORE, type AnswerStore } from '../answer-store/answer-store.port';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { AdmissionRefusedError, decideAdmission, refusalOf } from '../accounts/admission.policy';
import { AggregateRepository, type CommandContext, type CommandStep } from '../aggregates/aggregate.repository';
import { operationDecider, publicationInForce } from '../catalog/operation.decider';
import type { Publication } from '../catalog/operation.events';
import { operationStreamName } from '../catalog/operation.events';
import { IllegalTransitionError } from '../domain/domain.errors';
import { FeatureRegistry } from '../features/feature.registry';
import type { OperationFeature, PreparedConversation } from '../features/operation-feature';
import { CLOCK, isoAt } from '../domain/clock.token';
import { RETRY_JITTER } from '../domain/retry-jitter.token';
import { ProviderRegistry } from '../providers/provider.registry';
import { runToolLoop, type Clock, type RandomSource, type ToolLoopResult } from '../runtime';
import type { InvocationCommand } from './invocation.commands';
import { invocationDecider } from './invocation.decider';
import { invocationStreamName } from './invocation.events';
import { invocationSummary, isUnmeasured, type InvocationState } from './invocation.state';
import type { InvocationResult } from './invocation-result';
import { IdempotencyKeyReusedError, KeyedRequestInProgressError, UnknownOperationError, UnknownOrganizationError } from './invocation-errors';
import { InvocationEndings, MAX_KEYED_REPEAT_WAIT_MS } from './invocation-endings';
import { invocationIdFor } from './invocation-ids';
import { INVOCATION_INSTRUMENTATION, UNOBSERVED, type InvocationInstrumentation, type ObservedInvocation } from './invocation-instrumentation.port';
import { IDEMPOTENCY_SECRET, requestFingerprint } from './request-fingerprint';
import { RunningInvocations } from './running-invocations';
import { RunOperationCommand, type RunOperationRequest } from './run-operation.command';

@CommandHandler(RunOperationCommand)
export class RunOperationHandler implements ICommandHandler<RunOperationCommand, InvocationResult> {
  private readonly logger = new Logger(RunOperationHandler.name);
  private readonly settledLog = new Logger('Invocations');
  /** Keyed requests running in this process, so a repeat waits for the first instead of racing it. */
  // A repeat that joins shares the first's promise, and so its answer (docs/embedding.md "The answer").
  // `estimated` resolves once the first's stream exists, so an async repeat (onEstimated) answers then.
  private readonly inFlight = new Map<
    string,
    { readonly operationId: string; readonly fingerprint: string; readonly run: Promise<InvocationResult>; readonly estimated: Promise<void> }
  >();

  constructor(
    private readonly repository: AggregateRepository,
    private readonly features: FeatureRegistry,
    private readonly providers: ProviderRegistry,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(RETRY_JITTER) private readonly random: RandomSource,
    @Inject(ANSWER_STORE) private readonly answers: AnswerStore,
    @Inject(IDEMPOTENCY_SECRET) private readonly idempotencySecret: Buffer,
    private readonly running: RunningInvocations,
    private readonly endings: InvocationEndings,
    @Optional() @Inject(INVOCATION_INSTRUMENTATION) private readonly instrumentation: InvocationInstrumentation = UNOBSERVED,
  ) {}

  execute({ request }: RunOperationCommand): Promise<InvocationResult> {
    const feature = this.features.get(request.operationId);
    if (feature === undefined) return Promise.reject(new UnknownOperationError(request.operationId));
    const invocationId = invocationIdFor(request.organizationId, request.idempotencyKey);
    if (request.idempotencyKey === undefined) return this.run(invocationId, feature, request, undefined);
    const fingerprint = requestFingerprint(this.idempotencySecret, request.operationId, request.input);
    const running = this.inFlight.get(invocationId);
    if (running !== undefined) {
      // A repeat while the first still runs here waits for it (docs/http.md "Idempotency keys"), if it
      // is the same request.
      const differs = differenceOf(running, request.operationId, fingerprint);
      if (differs !== undefined) return Promise.reject(new IdempotencyKeyReusedError(request.idempotencyKey, differs));
      void running.estimated.then(() => request.onEstimated?.(invocationId));
      return running.run;
    }
    let markEstimated!: () => void;
    const estimated = new Promise<void>((resolve) => (markEstimated = resolve));
    const onEstimated = (id: string): void => {
      markEstimated();
      request.onEstimated?.(id);
    };
    const run = this.run(invocationId, feature, { ...request, onEstimated }, fingerprint);
    this.inFlight.set(invocationId, { operationId: request.operationId, fingerprint, run, estimated });
    return run.finally(() => this.inFlight.delete(invocationId));
  }

  private async run(
    invocationId: string,
    feature: OperationFeature,
    request: RunOperationRequest,
    fingerprint: string | undefined,
  ): Promise<InvocationResult> {
    const telemetry = this.instrumentation.start({ invocationId, operationId: request.operationId, organizationId: request.organizationId });
    // Registered before the first append: a cancellation recorded in the log from then on reaches it.
    const local = this.running.register(invocationId);
    const signal = request.signal === undefined ? local.signal : AbortSignal.any([request.signal, local.signal]);
    try {
      const summary = await telemetry.within(() => this.runOnce(invocationId, feature, { ...request, signal }, fingerprint, telemetry));
      telemetry.end(summary);
      return summary;
    } catch (error) {
      telemetry.fail(error);
      throw error;
    } finally {
      local.done();
      // Its run is over (final, or failed to the sweep): keeping the state warm would only hold memory
      // and feed the garbage collector; a later read of the stream (a keyed repeat) reads it again.
      this.repository.forget(invocationStreamName(invocationId));
    }
  }

  private async runOnce(
    invocationId: string,
    feature: OperationFeature,
    request: RunOperationRequest,
    fingerprint: string | undefined,
    telemetry: ObservedInvocation,
  ): Promise<InvocationResult> {
    const stream = invocationStreamName(invocationId);
    // Only the invocation's own run writes its stream; an unkeyed id was made just now, so its stream is new.
    const context: CommandContext = { correlationId: invocationId, newStream: request.idempotencyKey === undefined };
    const invoke = (command: InvocationCommand) => this.repository.handle(stream, invocationDecider, command, context);
    const invokeAll = (steps: readonly CommandStep<InvocationCommand, InvocationState>[]) =>
      this.repository.handleAll(stream, invocationDecider, steps, context);

    if (request.idempotencyKey !== undefined) {
      const existing = await this.repository.load(stream, invocationDecider);
      if (existing.revision !== undefined) return this.afterFirst(invocationId, existing.state, request, feature, fingerprint);
    }

    // Bad input is refused before anything is written.
    const conversation = feature.prepare(request.input);
    const publication = publicationInForce((await this.repository.load(operationStreamName(request.operationId), operationDecider)).state);
    const accountStream = accountStreamName(request.organizationId);
    // Admitted on the cached account, PlaceHold's expected revision re-checks it; a refusal or an
    // unknown organization is only concluded from the stream as read (another process may have granted).
    let account = await this.repository.load(accountStream, accountDecider, false);
    let decision = decideAdmission(account.state, publication);
    if (!account.state.exists || !decision.admitted) {
      account = await this.repository.load(accountStream, accountDecider);
      decision = decideAdmission(account.state, publication);
    }
    if (!account.state.exists) throw new UnknownOrganizationError(request.organizationId);

    try {
      await invoke({
        type: 'EstimateInvocation',
        data: {
          invocationId,
          operationId: request.operationId,
          organizationId: request.organizationId,
          publication: publication ?? null,
          ...(request.idempotencyKey === undefined ? {} : { idempotencyKey: request.idempotencyKey }),
          ...(fingerprint === undefined ? {} : { requestFingerprint: fingerprint }),
          estimatedAt: isoAt(this.clock),
        },
      });
    } catch (error) {
      // Another process estimated the same keyed request first: answer with its result.
      if (error instanceof IllegalTransitionError && request.idempotencyKey !== undefined) {
        const existing = await this.repository.load(stream, invocationDecider);
        return this.afterFirst(invocationId, existing.state, request, feature, fingerprint);
      }
      throw error;
    }
    request.onEstimated?.(invocationId);

    if (!decision.admitted) {
      return invocationSummary((await invoke({ type: 'RefuseInvocation', data: { ...refusalOf(decision), refusedAt: isoAt(this.clock) } })).state);
    }
    const admitted = publication as Publication;
    try {
      // The account re-checks against its own stream (the append's expected revision): concurrent
      // admissions never over-commit.
      await this.repository.handle(
        accountStream,
        accountDecider,
        { type: 'PlaceHold', data: { invocationId, credits: admitted.creditHold, placedAt: isoAt(this.clock) } },
        { correlationId: invocationId },
      );
    } catch (error) {
      if (!(error instanceof AdmissionRefusedError)) throw error;
      return invocationSummary((await invoke({ type: 'RefuseInvocation', data: { ...error.refusal, refusedAt: isoAt(this.clock) } })).state);
    }
    // Transitions 3 and 4 in one append: nothing happens between them that a crash could lose (the
    // request was captured by `prepare` above), and the provider is called only after both committed.
    const at = isoAt(this.clock);
    const dispatched = await invokeAll([
      { type: 'ReserveInvocation', data: { reservedAt: at } },
      { type: 'DispatchInvocation', data: { dispatchedAt: at } },
    ]);
    // Asked to stop before the conversation began (the stream says so): it ends at step 1, sending nothing.
    if (dispatched.state.cancellation !== undefined) this.running.cancel(invocationId, dispatched.state.cancellation);

    let settled: InvocationState;
    let answer: unknown;
    try {
      const result = await this.converse(feature, conversation, admitted, Date.parse(at), request.signal, invoke, telemetry);
      settled = await this.close(result, invokeAll);
      if (result.outcome === 'completed') answer = result.answer;
    } catch (error) {
      // docs/lifecycle.md transition 11: something escaped the protected block; the real cost is unknown.
      this.logger.error({ message: 'invocation failed outside the conversation', invocationId, error: describe(error) });
      settled = (await invokeAll(this.settlement('exception', isoAt(this.clock)))).state;
    }
    const charge = settled.settlement?.chargeCredits ?? 0;
    await this.repository.handle(
      accountStream,
      accountDecider,
      { type: 'SettleHold', data: { invocationId, chargeCredits: charge, settledAt: isoAt(this.clock) } },
      { correlationId: invocationId },
    );
    const summary = invocationSummary(settled);
    // One line per settled invocation, figures only. Written here, inside the invocation's span, so it
    // names the trace; the public InvocationSettled reaches the EventBus later, from the log.
    this.settledLog.log({ message: 'invocation settled', organizationId: request.organizationId, operationId: request.operationId, ...summary, ...this.instrumentation.traceFields() });
    if (answer === undefined) return summary;
    this.keepAnswer(invocationId, answer, feature);
    return { ...summary, answer };
  }

  /** For keyed repeats after settlement, when the feature asked for it; losing it costs only the repeat's answer. */
  private keepAnswer(invocationId: string, answer: unknown, feature: OperationFeature): void {
    if (feature.answerRetentionMs === undefined) return;
    try {
      this.answers.keep(invocationId, answer, feature.answerRetentionMs);
    } catch (error) {
      this.logger.warn({ message: 'the answer could not be kept for repeats', invocationId, error: describe(error) });
    }
  }

  private converse(
    feature: OperationFeature,
    conversation: PreparedConversation,
    publication: Publication,
    dispatchedAtMs: number,
    signal: AbortSignal | undefined,
    invoke: (command: InvocationCommand) => Promise<unknown>,
    telemetry: ObservedInvocation,
  ): Promise<ToolLoopResult> {
    return runToolLoop(telemetry.instrument({
      ...conversation,
      limits: publication.limits,
      prices: publication.prices,
      creditHold: publication.creditHold,
      model: publication.routing.model,
      provider: this.providers.resolve(publication.routing, feature),
      clock: this.clock,
      random: this.random,
      // The time budget runs from the recorded dispatch, the instant a sweep measures it from.
      startedAtMs: dispatchedAtMs,
      ...(signal === undefined ? {} : { signal }),
      // One event per attempt as it happens: a crash mid-conversation never loses a billed attempt.
      onAttempt: async (record) => {
        await invoke({ type: 'RecordAttempt', data: record });
      },
    }));
  }

  /**
   * Records how the conversation ended and settles it (transitions 5/6, then 7, then 8/9/10), in one
   * append: the result and its settlement commit together, so no crash can leave a result unsettled.
   */
  private async close(
    result: ToolLoopResult,
    invokeAll: (steps: readonly CommandStep<InvocationCommand, InvocationState>[]) => Promise<{ readonly state: InvocationState }>,
  ): Promise<InvocationState> {
    const figures = {
      turnsUsed: result.turnsUsed,
      toolCallsUsed: result.toolCallsUsed,
      spentCredits: result.spentCredits,
      attemptCount: result.attemptCount,
      usageTotals: result.usageTotals,
      usageReported: result.usageReported,
    };
    const at = isoAt(this.clock);
    const ended: InvocationCommand =
      result.outcome === 'failed'
        ? { type: 'FailInvocation', data: { ...figures, fault: result.faultClassification ?? 'server_error', failedAt: at } }
        : {
            type: 'CompleteInvocation',
            data: {
              ...figures,
              outcome: result.outcome,
              ...(result.endingLimit === undefined ? {} : { endingLimit: result.endingLimit }),
              completedAt: at,
            },
          };
    return (await invokeAll([ended, ...this.settlement('runtime', at)])).state;
  }

  /** Transition 7 when a completed result reported no usage, then settlement (8–11). */
  private settlement(by: 'runtime' | 'exception', at: string): CommandStep<InvocationCommand, InvocationState>[] {
    return [
      (current) => (current.status === 'completed' && isUnmeasured(current) ? { type: 'MarkInvocationPending', data: { pendingAt: at } } : undefined),
      { type: 'SettleInvocation', data: { by, settledAt: at } },
    ];
  }

  /**
   * A keyed repeat whose first request is in the log but runs elsewhere (another process on the same
   * store; this process's own runs are joined in `execute`): waits for the first to settle, observing
   * the log, at most MAX_KEYED_REPEAT_WAIT_MS by the clock, then answers with its result (docs/http.md
   * "Idempotency keys": a concurrent repeat waits for the first). Never runs the request a second time,
   * never answers with a result the first has not reached yet.
   */
  private async afterFirst(
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

  /**
   * The first request's result for a repeat of its key, from the log (another process may have run
   * it), with its answer when the feature keeps answers; refused when the key's first request had
   * another operation or input.
   */
  private repeatOf(first: InvocationState, request: RunOperationRequest, feature: OperationFeature, fingerprint: string | undefined): InvocationResult {
    const differs = differenceOf(
      { operationId: first.operationId, fingerprint: first.requestFingerprint },
      request.operationId,
      fingerprint,
    );
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
function differenceOf(
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
