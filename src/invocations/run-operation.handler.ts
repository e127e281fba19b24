import { Inject, Logger, Optional } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { AggregateRepository, type CommandContext } from '../aggregates/aggregate.repository';
import { operationDecider } from '../catalog/operation.decider';
import { operationStreamName } from '../catalog/operation.events';
import { FeatureRegistry } from '../features/feature.registry';
import type { OperationFeature } from '../features/operation-feature';
import { CLOCK, isoAt } from '../domain/clock.token';
import { RETRY_JITTER } from '../domain/retry-jitter.token';
import { ProviderRegistry } from '../providers/provider.registry';
import { runToolLoop, type Clock, type RandomSource, type ToolLoopResult } from '../runtime';
import { INSTANCE_LEASE, type LeaseHolder } from './instance-lease';
import { invocationDecider } from './invocation.decider';
import { invocationStreamName } from './invocation.events';
import type { InvocationResult } from './invocation-result';
import { UnknownOperationError } from './invocation-errors';
import { invocationIdFor } from './invocation-ids';
import { INVOCATION_INSTRUMENTATION, UNOBSERVED, type InvocationInstrumentation, type ObservedInvocation } from './invocation-instrumentation.port';
import { KeyedRepeats } from './keyed-repeats';
import { RunningInvocations } from './running-invocations';
import { RunOperationCommand, type RunOperationRequest } from './run-operation.command';
import { decideRun, startRun, type LastStep, type Observation, type RunStep } from './run-workflow';

/** What executing one run's steps needs, fixed for the run. */
interface Run {
  readonly invocationId: string;
  readonly feature: OperationFeature;
  readonly request: RunOperationRequest;
  readonly fingerprint: string | undefined;
  readonly telemetry: ObservedInvocation;
  readonly stream: string;
  readonly accountStream: string;
  readonly context: CommandContext;
}

const DONE: Observation = { type: 'Done' };
const ACCOUNT_CHANGED: Observation = { type: 'AccountChanged' };

/**
 * Runs an operation by executing the steps of its workflow (run-workflow.ts): loads and appends
 * through the AggregateRepository, the conversation through the runtime. Keyed repeats are
 * KeyedRepeats' (keyed-repeats.ts).
 */
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
    // The instance's lease: each run records it as its owner, so recovery leaves the run alone while it lives.
    @Optional() @Inject(INSTANCE_LEASE) private readonly lease?: LeaseHolder,
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
    const stream = invocationStreamName(invocationId);
    const run: Run = {
      invocationId,
      feature,
      request: { ...request, signal },
      fingerprint,
      telemetry,
      stream,
      accountStream: accountStreamName(request.organizationId),
      // Only the invocation's own run writes its stream; an unkeyed id was made just now, so its stream is new.
      context: { correlationId: invocationId, newStream: request.idempotencyKey === undefined },
    };
    try {
      const summary = await telemetry.within(() => this.runOnce(run));
      telemetry.end(summary);
      return summary;
    } catch (error) {
      telemetry.fail(error);
      throw error;
    } finally {
      local.done();
      // Its run is over (final, or failed to the sweep): keeping the state warm would only hold memory
      // and feed the garbage collector; a later read of the stream (a keyed repeat) reads it again.
      this.repository.forget(stream);
    }
  }

  /** Executes the workflow's steps, each awaited once, until its last. */
  private async runOnce(run: Run): Promise<InvocationResult> {
    const { request } = run;
    let { state, step } = startRun({
      invocationId: run.invocationId,
      operationId: request.operationId,
      organizationId: request.organizationId,
      ...(request.idempotencyKey === undefined ? {} : { idempotencyKey: request.idempotencyKey }),
      ...(run.fingerprint === undefined ? {} : { fingerprint: run.fingerprint }),
      ...(this.lease?.leaseId === undefined ? {} : { ownerLeaseId: this.lease.leaseId }),
    });
    for (;;) {
      if (isLast(step)) return this.finish(step, run);
      let observed: Observation;
      try {
        switch (step.type) {
          case 'ReadInvocation':
            observed = { type: 'InvocationRead', ...(await this.repository.load(run.stream, invocationDecider)) };
            break;
          case 'Prepare':
            observed = { type: 'Prepared', conversation: run.feature.prepare(request.input) };
            break;
          case 'ReadPublication':
            observed = { type: 'PublicationRead', operation: (await this.repository.load(operationStreamName(request.operationId), operationDecider)).state };
            break;
          case 'ReadAccount':
            observed = { type: 'AccountRead', account: (await this.repository.load(run.accountStream, accountDecider, !step.cached)).state };
            break;
          case 'Invoke':
            observed = { type: 'Invoked', state: (await this.repository.handle(run.stream, invocationDecider, step.command, run.context)).state };
            break;
          case 'InvokeAll':
            observed = { type: 'Invoked', state: (await this.repository.handleAll(run.stream, invocationDecider, step.steps, run.context)).state };
            break;
          case 'OnAccount':
            await this.repository.handle(run.accountStream, accountDecider, step.command, { correlationId: run.invocationId });
            observed = ACCOUNT_CHANGED;
            break;
          case 'WithAccount': {
            const alongside = { streamName: run.stream, decider: invocationDecider, before: step.before, after: step.after, context: run.context };
            const handled = await this.repository.handleAlongside(run.accountStream, accountDecider, step.command, alongside, { correlationId: run.invocationId });
            observed = { type: 'Invoked', state: handled.alongside.state };
            break;
          }
          case 'AnnounceEstimated':
            request.onEstimated?.(run.invocationId);
            observed = DONE;
            break;
          case 'StopBeforeStart':
            this.running.cancel(run.invocationId, step.cancellation);
            observed = DONE;
            break;
          case 'Converse':
            observed = { type: 'Conversed', result: await this.converse(step, run) };
            break;
          case 'ReportEscape':
            this.logger.error({ message: 'invocation failed outside the conversation', invocationId: run.invocationId, error: describe(step.error) });
            observed = DONE;
            break;
        }
      } catch (error) {
        observed = { type: 'Threw', error };
      }
      ({ state, step } = decideRun(state, { ...observed, at: isoAt(this.clock) }));
    }
  }

  /** The run's last step: its result, the key's first request's, or its failure. */
  private finish(step: LastStep, run: Run): InvocationResult | Promise<InvocationResult> {
    switch (step.type) {
      case 'AnswerAsRepeat':
        return this.repeats.afterFirst(run.invocationId, step.first, run.request, run.feature, run.fingerprint);
      case 'Refused':
        return step.result;
      case 'Fail':
        throw step.error;
      case 'Settled': {
        const { request } = run;
        // One line per settled invocation, figures only. Written here, inside the invocation's span, so it
        // names the trace; the public InvocationSettled reaches the EventBus later, from the log.
        this.settledLog.log({ message: 'invocation settled', organizationId: request.organizationId, operationId: request.operationId, ...step.result, ...this.instrumentation.traceFields() });
        if (step.answer === undefined) return step.result;
        this.repeats.keepAnswer(run.invocationId, step.answer, run.feature);
        return { ...step.result, answer: step.answer };
      }
    }
  }

  private converse(step: Extract<RunStep, { type: 'Converse' }>, run: Run): Promise<ToolLoopResult> {
    const { conversation, publication } = step;
    return runToolLoop(run.telemetry.instrument({
      ...conversation,
      limits: publication.limits,
      prices: publication.prices,
      creditHold: publication.creditHold,
      model: publication.routing.model,
      provider: this.providers.resolve(publication.routing, run.feature),
      clock: this.clock,
      random: this.random,
      // The time budget runs from the recorded dispatch, the instant a sweep measures it from.
      startedAtMs: step.dispatchedAtMs,
      ...(run.request.signal === undefined ? {} : { signal: run.request.signal }),
      // One event per attempt as it happens: a crash mid-conversation never loses a billed attempt.
      onAttempt: async (record) => {
        await this.repository.handle(run.stream, invocationDecider, { type: 'RecordAttempt', data: record }, run.context);
      },
    }));
  }
}

function isLast(step: RunStep): step is LastStep {
  return step.type === 'AnswerAsRepeat' || step.type === 'Refused' || step.type === 'Settled' || step.type === 'Fail';
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
