import { Inject, Logger, Optional } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
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
import { UnknownOperationError, UnknownOrganizationError } from './invocation-errors';
import { invocationIdFor } from './invocation-ids';
import { KeyedRepeats } from './keyed-repeats';
import { INVOCATION_INSTRUMENTATION, UNOBSERVED, type InvocationInstrumentation, type ObservedInvocation } from './invocation-instrumentation.port';
import { RunningInvocations } from './running-invocations';
import { RunOperationCommand, type RunOperationRequest } from './run-operation.command';

@CommandHandler(RunOperationCommand)
export class RunOperationHandler implements ICommandHandler<RunOperationCommand, InvocationResult> {
  private readonly logger = new Logger(RunOperationHandler.name);
  private readonly settledLog = new Logger('Invocations');
  constructor(
    private readonly repository: AggregateRepository,
    private readonly features: FeatureRegistry,
    private readonly providers: ProviderRegistry,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(RETRY_JITTER) private readonly random: RandomSource,
    private readonly running: RunningInvocations,
    private readonly repeats: KeyedRepeats,
    @Optional() @Inject(INVOCATION_INSTRUMENTATION) private readonly instrumentation: InvocationInstrumentation = UNOBSERVED,
  ) {}

  execute({ request }: RunOperationCommand): Promise<InvocationResult> {
    const feature = this.features.get(request.operationId);
    if (feature === undefined) return Promise.reject(new UnknownOperationError(request.operationId));
    const invocationId = invocationIdFor(request.organizationId, request.idempotencyKey);
    if (request.idempotencyKey === undefined) return this.run(invocationId, feature, request, undefined);
    return this.repeats.join(invocationId, request, (first, fingerprint) => this.run(invocationId, feature, first, fingerprint));
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
      if (existing.revision !== undefined) return this.repeats.afterFirst(invocationId, existing.state, request, feature, fingerprint);
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
        return this.repeats.afterFirst(invocationId, existing.state, request, feature, fingerprint);
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
    this.repeats.keepAnswer(invocationId, answer, feature);
    return { ...summary, answer };
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

}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
