/**
 * The bounded conversation (docs/rules.md, BR-CAP-PFM-LLM-002-01…15): a model/tool loop that cannot run away
 * with turns, tool calls, time or credits, and that reports every provider attempt as it happens.
 *
 * Each turn runs the eleven steps of docs/rules.md in order; the step numbers in the comments below are the
 * spec's. Time decisions (documented here because the spec leaves them open):
 * - Handlers and judges are raced against the conversation deadline and the caller's cancellation; the
 *   signal they get fires at that moment. One still running then ends the conversation at once with
 *   `time_limit` (or `cancelled`); the runtime does not wait for it, and its late result is ignored.
 * - No judge or handler is started once the deadline has passed (its result could not be used).
 * - An answer accepted only after the deadline does not complete the conversation: time ran out first.
 * - Time spent in `onAttempt` (the accounting write) counts against the deadline but is never cut short,
 *   because a billed attempt's record must be written.
 * Counting decisions:
 * - A batch's calls count against `maxToolCalls` once the batch passes steps 9 and 10 and starts to run,
 *   so a batch interrupted by the deadline or a cancellation has still used its calls.
 * - Answer calls are validated against their schema and judged at step 6, in request order; the first
 *   accepted one completes the conversation, even in a batch that step 10 would have refused.
 */
import { Stopper, timeoutReason, type Clock } from './clock';
import type { AttemptRecord, ConversationLimits, EndingLimit, Outcome, Prices } from './conversation.types';
import { executeWithRetry } from './execute-with-retry';
import type { FaultClass } from './faults';
import { assertPrices } from './pricing';
import type { ContentBlock, Message, Provider, ProviderFeatures, TextBlock, ToolDefinition, ToolResultBlock, ToolUseBlock, Usage } from './provider.port';
import type { RandomSource } from './retry-policy';
import { boundToolErrorText, describeThrown } from './tool-error-text';
import { addUsage, NO_USAGE } from './usage';
import { buildToolCatalog, malformedArgumentsText, preflightToolCalls, type BatchViolation, type CatalogEntry } from './tool-preflight';
import { MAX_RETAINED_ATTEMPTS } from './conversation.types';
import type { AnswerToolSpec, JudgeContext, TextJudge, ToolContext, ToolSpec, Verdict } from './tool.types';


/** What the model is told when it ends a turn with text while an answer tool is designated. */
export function answerToolReminder(answerToolName: string): string {
  return `Give your final answer by calling the ${answerToolName} tool.`;
}

/** Feedback when a judge throws or returns no usable verdict: the answer is rejected, internals stay out. */
export const JUDGE_FAILED_FEEDBACK = 'The answer could not be checked, so it was not accepted. Try again.';
const ANSWER_REJECTED_FEEDBACK = 'The answer was not accepted.';

export interface ToolLoopInput {
  /** The conversation so far (normally one user message). Never retained in attempt records. */
  readonly messages: readonly Message[];
  /** Stable instructions; sent unchanged on every request (a block marked `stable` may be cached). */
  readonly system?: readonly TextBlock[];
  readonly tools: readonly ToolSpec[];
  /** Server tools and extended thinking for the provider, passed through unchanged. */
  readonly providerFeatures?: ProviderFeatures;
  /** The designated answer tool; without one, a text-only turn is the final answer. */
  readonly answerTool?: AnswerToolSpec;
  /** Judges a text-only final answer when there is no answer tool; absent, such text is accepted. */
  readonly textJudge?: TextJudge;
  readonly limits: ConversationLimits;
  readonly prices: Prices;
  /** Integer credits reserved at admission: the conversation's credit budget (BR-03). */
  readonly creditHold: number;
  readonly model: string;
  readonly provider: Provider;
  readonly clock: Clock;
  /** The caller's cancellation; ends the conversation `cancelled` at the next boundary, or at once. */
  readonly signal?: AbortSignal;
  /**
   * Awaited for every provider attempt as it happens, in order, before the loop goes on, so the
   * accounting core can write one event per attempt and a crash never loses a billed attempt. Called for
   * every attempt, also beyond MAX_RETAINED_ATTEMPTS. A throw ends the loop with that error.
   */
  readonly onAttempt?: (record: AttemptRecord, attemptNumber: number) => void | Promise<void>;
  /** Jitter source for retry waits, in [0, 1); default Math.random. */
  readonly random?: RandomSource;
  /**
   * Clock time at which the conversation's time budget (`limits.totalTimeMs`) began; default now. The
   * accounting core passes the dispatch time it recorded, so the deadline the loop keeps is the one a
   * sweep reads from the log (dispatchedAt + totalTimeMs), never later. Must not be in the future.
   */
  readonly startedAtMs?: number;
}

export interface ToolLoopResult {
  readonly outcome: Outcome;
  /** The bound that ended the conversation, for the `*_limit` outcomes. */
  readonly endingLimit?: EndingLimit;
  /** The last provider fault, when a fault ended the conversation (`failed`, `time_limit`, `cancelled`). */
  readonly faultClassification?: FaultClass;
  /** Which batch-fatal rule a `protocol_error` broke. */
  readonly protocolViolation?: BatchViolation;
  /** Model turns sent (a turn's retries are the same turn). */
  readonly turnsUsed: number;
  /** Tool calls answered or admitted to run (error results included; an accepted answer adds none). */
  readonly toolCallsUsed: number;
  /** Credits spent: the sum of every attempt's rounded price. May exceed the hold by the crossing turn. */
  readonly spentCredits: number;
  /** The first MAX_RETAINED_ATTEMPTS attempts, in order. */
  readonly attempts: readonly AttemptRecord[];
  /** Every attempt made, retained or not. */
  readonly attemptCount: number;
  /** True when attempts were made beyond the retained ones. */
  readonly attemptsTruncated: boolean;
  /** Exact token totals over all attempts (retained or not). */
  readonly usageTotals: Usage;
  /** Exact price total over all attempts; equals spentCredits. */
  readonly priceTotalCredits: number;
  /** Whether any attempt reported usage; when none did, accounting settles at the estimate (pending). */
  readonly usageReported: boolean;
  /** The accepted answer when `completed`: the answer tool's input, or the final text. */
  readonly answer?: unknown;
  /** Clock time the conversation took, in ms. */
  readonly elapsedMs: number;
}

function assertCount(name: string, value: number, min = 0): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`${name} must be an integer >= ${min}, got ${String(value)}`);
  }
}

function assertInput(input: ToolLoopInput): void {
  const { limits } = input;
  assertCount('limits.maxTurns', limits.maxTurns);
  assertCount('limits.maxToolCalls', limits.maxToolCalls);
  assertCount('limits.totalTimeMs', limits.totalTimeMs);
  assertCount('limits.attemptTimeoutMs', limits.attemptTimeoutMs, 1);
  assertCount('limits.maxOutputTokens', limits.maxOutputTokens, 1);
  assertCount('limits.maxAttemptsPerTurn', limits.maxAttemptsPerTurn, 1);
  assertCount('creditHold', input.creditHold);
  assertPrices(input.prices);
  if (typeof input.model !== 'string' || input.model.length === 0) throw new TypeError('model must be a non-empty string');
}

function safeAdd(total: number, amount: number, what: string): number {
  const sum = total + amount;
  if (!Number.isSafeInteger(sum)) throw new RangeError(`${what} total left the safe integer range`);
  return sum;
}

/** Keeps the first MAX_RETAINED_ATTEMPTS records and exact totals over all of them. */
class AttemptLedger {
  readonly attempts: AttemptRecord[] = [];
  count = 0;
  truncated = false;
  priceCredits = 0;
  usageReported = false;
  usageTotals: Usage = NO_USAGE;

  constructor(private readonly onAttempt: ToolLoopInput['onAttempt']) {}

  readonly record = (attempt: AttemptRecord): void | Promise<void> => {
    this.count += 1;
    if (this.attempts.length < MAX_RETAINED_ATTEMPTS) this.attempts.push(attempt);
    else this.truncated = true;
    this.priceCredits = safeAdd(this.priceCredits, attempt.priceCredits, 'price');
    const usage = attempt.usage;
    if (usage !== undefined) {
      this.usageReported = true;
      this.usageTotals = addUsage(this.usageTotals, usage);
    }
    return this.onAttempt?.(attempt, this.count);
  };
}

/** Stops handlers and judges at the deadline or on the caller's cancellation. */
type ConversationStop = Stopper<'cancelled' | 'deadline'>;

/** What a handler or judge gets; the signal is only created if it is read (so read it, do not spread). */
class CallContext implements ToolContext {
  constructor(
    private readonly stop: ConversationStop,
    readonly callId: string,
  ) {}

  get signal(): AbortSignal {
    return this.stop.signal;
  }
}

/** The text judge's context: no call id. */
class TextJudgeContext implements JudgeContext {
  constructor(private readonly stop: ConversationStop) {}

  get signal(): AbortSignal {
    return this.stop.signal;
  }
}

const STOPPED = Symbol('stopped');
type JudgeOutcome = { readonly accepted: true } | { readonly accepted: false; readonly feedback: string } | typeof STOPPED;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

const JUDGE_FAILED: JudgeOutcome = { accepted: false, feedback: JUDGE_FAILED_FEEDBACK };

/** Only `{ accepted: true }` accepts; anything else, even a verdict whose reading throws, rejects. */
function readVerdict(verdict: unknown): JudgeOutcome {
  try {
    const { accepted, feedback } = (verdict ?? {}) as { accepted?: unknown; feedback?: unknown };
    if (accepted === true) return { accepted: true };
    const text = typeof feedback === 'string' ? boundToolErrorText(feedback) : '';
    return { accepted: false, feedback: text.length > 0 ? text : ANSWER_REJECTED_FEEDBACK };
  } catch {
    return JUDGE_FAILED;
  }
}

/**
 * Runs a judge raced against the stop; a throw or an unusable verdict is a rejection. A judge that
 * answers synchronously is read at once, without a trip through the microtask queue.
 */
function judgeRaced(judge: () => Verdict | Promise<Verdict>, stop: ConversationStop): JudgeOutcome | Promise<JudgeOutcome> {
  let verdict: Verdict | Promise<Verdict>;
  try {
    verdict = judge();
  } catch {
    return JUDGE_FAILED;
  }
  if (!isThenable(verdict)) return readVerdict(verdict);
  return stop.raceTo(Promise.resolve(verdict), readVerdict, (): JudgeOutcome => (stop.cause !== undefined ? STOPPED : JUDGE_FAILED));
}

function errorResult(toolUseId: string, text: string): ToolResultBlock {
  return { type: 'tool_result', toolUseId, content: text, isError: true };
}

function handlerFailure(call: ToolUseBlock, error: unknown): ToolResultBlock {
  // BR-09: the message reaches the model, bounded and without stack.
  return errorResult(call.id, describeThrown(error, `Tool ${JSON.stringify(call.name)} failed.`));
}

function handlerSuccess(call: ToolUseBlock, value: unknown): ToolResultBlock {
  try {
    const content = typeof value === 'string' ? value : value === undefined ? '' : (JSON.stringify(value) ?? '');
    return { type: 'tool_result', toolUseId: call.id, content, isError: false };
  } catch (error) {
    return handlerFailure(call, error);
  }
}

/** Starts a handler; a synchronous handler's result is ready at once, an async one is a promise. */
function startHandler(entry: CatalogEntry, call: ToolUseBlock, stop: ConversationStop): ToolResultBlock | Promise<ToolResultBlock> {
  let value: unknown;
  try {
    value = entry.tool!.handler!(call.input, new CallContext(stop, call.id));
  } catch (error) {
    return handlerFailure(call, error);
  }
  if (!isThenable(value)) return handlerSuccess(call, value);
  return Promise.resolve(value).then(
    (resolved) => handlerSuccess(call, resolved),
    (error: unknown) => handlerFailure(call, error),
  );
}

function toolUsesOf(content: readonly ContentBlock[]): ToolUseBlock[] {
  const calls: ToolUseBlock[] = [];
  for (const block of content) if (block.type === 'tool_use') calls.push(block);
  return calls;
}

function textOf(content: readonly ContentBlock[]): string {
  let text = '';
  for (const block of content) if (block.type === 'text') text += block.text;
  return text;
}

function userText(text: string): Message {
  return { role: 'user', content: [{ type: 'text', text }] };
}

/**
 * Runs one bounded conversation to its outcome. Rejects (before sending anything) on invalid limits,
 * prices, hold or tool definitions; rejects mid-way only when `onAttempt` throws, a provider breaks its
 * port by throwing something other than a ProviderFault, or a provider reports invalid usage.
 */
export async function runToolLoop(input: ToolLoopInput): Promise<ToolLoopResult> {
  assertInput(input);
  const { limits, clock, provider, answerTool, textJudge } = input;
  const catalog = buildToolCatalog(input.tools, answerTool);
  const definitionOf = (tool: ToolSpec | AnswerToolSpec): ToolDefinition => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    stable: true,
    ...(tool.cacheTtl === undefined ? {} : { cacheTtl: tool.cacheTtl }),
  });
  const toolDefinitions: ToolDefinition[] = input.tools.map(definitionOf);
  if (answerTool !== undefined) toolDefinitions.push(definitionOf(answerTool));
  const system = input.system ?? [];
  const random = input.random ?? Math.random;

  const messages: Message[] = [...input.messages];
  const seenCallIds = new Set<string>();
  for (const message of input.messages) for (const call of toolUsesOf(message.content)) seenCallIds.add(call.id);

  const ledger = new AttemptLedger(input.onAttempt);
  const nowMs = clock.now();
  const startedAtMs = Math.min(input.startedAtMs ?? nowMs, nowMs);
  const deadlineMs = startedAtMs + limits.totalTimeMs;
  const stop: ConversationStop = new Stopper();
  const cancelDeadline = clock.setTimer(Math.max(0, deadlineMs - nowMs), () =>
    stop.stop('deadline', timeoutReason(`conversation deadline of ${limits.totalTimeMs} ms passed`)),
  );
  const cancel = input.signal;
  const onCancel = (): void => stop.stop('cancelled', cancel?.reason);
  if (cancel?.aborted) onCancel();
  else cancel?.addEventListener('abort', onCancel, { once: true });
  let turnsUsed = 0;
  let toolCallsUsed = 0;

  const finish = (
    outcome: Outcome,
    extra: { endingLimit?: EndingLimit; fault?: FaultClass; violation?: BatchViolation; answer?: unknown } = {},
  ): ToolLoopResult => {
    // The bounds money depends on; a breach is a bug, never a result.
    if (turnsUsed > limits.maxTurns || toolCallsUsed > limits.maxToolCalls) {
      throw new Error(`runToolLoop invariant broken: ${turnsUsed} turns, ${toolCallsUsed} tool calls`);
    }
    return {
      outcome,
      endingLimit: extra.endingLimit,
      faultClassification: extra.fault,
      protocolViolation: extra.violation,
      turnsUsed,
      toolCallsUsed,
      spentCredits: ledger.priceCredits,
      attempts: ledger.attempts,
      attemptCount: ledger.count,
      attemptsTruncated: ledger.truncated,
      usageTotals: ledger.usageTotals,
      priceTotalCredits: ledger.priceCredits,
      usageReported: ledger.usageReported,
      answer: extra.answer,
      elapsedMs: clock.now() - startedAtMs,
    };
  };
  // Strict excess: spending exactly the hold may continue (FND-PFM-LLM-061).
  const overHold = (): boolean => ledger.priceCredits > input.creditHold;
  const finishStopped = (): ToolLoopResult =>
    stop.cause === 'cancelled' ? finish('cancelled') : finish('time_limit', { endingLimit: 'totalTimeMs' });

  try {
    for (;;) {
      // 1. Cancellation: never repairable, never retried.
      if (cancel?.aborted) return finish('cancelled');
      // 2. Turn budget (BR-01): exactly maxTurns requests, never more.
      if (turnsUsed >= limits.maxTurns) return finish('turn_limit', { endingLimit: 'maxTurns' });
      // 3. Time budget (BR-04): nothing is sent without time left; the attempt timeout is capped below.
      if (deadlineMs - clock.now() <= 0) return finish('time_limit', { endingLimit: 'totalTimeMs' });

      // 4. Send with retries; every attempt is reported (and priced: step 5) as it happens.
      turnsUsed += 1;
      const execution = await executeWithRetry({
        provider,
        request: {
          model: input.model,
          system,
          messages: messages.slice(),
          tools: toolDefinitions,
          maxOutputTokens: limits.maxOutputTokens,
          ...(input.providerFeatures === undefined ? {} : { features: input.providerFeatures }),
        },
        clock,
        turn: turnsUsed,
        deadlineMs,
        attemptTimeoutMs: limits.attemptTimeoutMs,
        maxAttemptsPerTurn: limits.maxAttemptsPerTurn,
        prices: input.prices,
        random,
        signal: input.signal,
        report: ledger.record,
      });
      if (!execution.ok) {
        if (execution.ending === 'cancelled') return finish('cancelled', { fault: execution.fault });
        if (execution.ending === 'time_limit') return finish('time_limit', { endingLimit: 'totalTimeMs', fault: execution.fault });
        return finish('failed', { fault: execution.fault });
      }
      // 5. The turn's price is already in ledger.priceCredits: the sum of its attempts' rounded prices.
      const response = execution.response;
      const calls = toolUsesOf(response.content);
      // A refused or cut-off response is never an answer, so it is never judged.
      const cutOff =
        response.stopReason === 'refusal' || response.stopReason === 'max_tokens' || response.stopReason === 'context_window_exceeded';

      // 6. Final answer first (BR-14): an accepted answer completes whatever else the turn asked or cost.
      let answerFeedback: string[] | undefined;
      if (answerTool !== undefined && !cutOff && calls.length > 0) {
        for (let index = 0; index < calls.length; index++) {
          const call = calls[index]!;
          if (call.name !== answerTool.name) continue;
          if (stop.cause !== undefined) return finishStopped();
          const entry = catalog.entries.get(answerTool.name)!;
          let verdict: JudgeOutcome | Promise<JudgeOutcome> = entry.validate(call.input)
            ? judgeRaced(() => answerTool.judge(call.input, new CallContext(stop, call.id)), stop)
            : { accepted: false, feedback: malformedArgumentsText(call.name, entry.validate.errors) };
          if (verdict instanceof Promise) verdict = await verdict;
          if (verdict === STOPPED) return finishStopped();
          if (verdict.accepted) return finish('completed', { answer: call.input });
          (answerFeedback ??= [])[index] = verdict.feedback;
        }
      }

      // 7. Terminal responses (BR-11), then text-only turns.
      if (response.stopReason === 'refusal') return finish('refused_by_model');
      if (cutOff) return finish('incomplete');
      if (calls.length === 0) {
        if (response.content.length > 0) messages.push({ role: 'assistant', content: response.content });
        // 8. Credit guard (BR-03) on every turn that continues, text turns included: a pause_turn or a
        // reminder would send another request, so they stop at strict excess like a tool turn does.
        if (response.stopReason === 'pause_turn') {
          if (overHold()) return finish('credit_limit', { endingLimit: 'creditHold' });
          continue;
        }
        if (answerTool !== undefined) {
          if (overHold()) return finish('credit_limit', { endingLimit: 'creditHold' });
          messages.push(userText(answerToolReminder(answerTool.name)));
          continue;
        }
        const text = textOf(response.content);
        if (textJudge === undefined) return finish('completed', { answer: text });
        if (stop.cause !== undefined) return finishStopped();
        let verdict = judgeRaced(() => textJudge(text, new TextJudgeContext(stop)), stop);
        if (verdict instanceof Promise) verdict = await verdict;
        if (verdict === STOPPED) return finishStopped();
        if (verdict.accepted) return finish('completed', { answer: text });
        if (overHold()) return finish('credit_limit', { endingLimit: 'creditHold' });
        messages.push(userText(verdict.feedback));
        continue;
      }

      // 8. Credit guard (BR-03): strictly over the hold stops; exactly the hold continues.
      if (overHold()) return finish('credit_limit', { endingLimit: 'creditHold' });
      // 9. Tool budget (BR-02): the whole batch fits or none of it runs. A rejected answer call counts.
      if (calls.length > limits.maxToolCalls - toolCallsUsed) return finish('tool_limit', { endingLimit: 'maxToolCalls' });
      // With no turn left, nobody could read the results: do not run the handlers.
      if (turnsUsed >= limits.maxTurns) return finish('turn_limit', { endingLimit: 'maxTurns' });

      // 10. Per-call preflight (seed 003), before anything runs.
      const preflight = preflightToolCalls(calls, catalog, seenCallIds);
      if (!preflight.ok) return finish('protocol_error', { violation: preflight.violation });
      for (const call of calls) seenCallIds.add(call.id);

      // 11. Run and answer (BR-08/09/10): one result per call id, in request order, in ONE message.
      if (stop.cause !== undefined) return finishStopped();
      if (clock.now() >= deadlineMs) return finish('time_limit', { endingLimit: 'totalTimeMs' });
      toolCallsUsed += calls.length;
      const results = new Array<ToolResultBlock>(calls.length);
      const running: Promise<void>[] = [];
      for (let index = 0; index < calls.length; index++) {
        const call = calls[index]!;
        const status = preflight.calls[index]!;
        if (status.kind === 'run') {
          const started = startHandler(status.entry, call, stop);
          if (started instanceof Promise) {
            running.push(
              started.then((result) => {
                results[index] = result;
              }),
            );
          } else results[index] = started;
        } else if (status.kind === 'answer') {
          results[index] = errorResult(call.id, answerFeedback?.[index] ?? ANSWER_REJECTED_FEEDBACK);
        } else {
          results[index] = errorResult(call.id, status.text);
        }
      }
      if (running.length > 0) {
        try {
          await stop.race<unknown>(running.length === 1 ? running[0]! : Promise.all(running));
        } catch {
          return finishStopped();
        }
      }
      messages.push({ role: 'assistant', content: response.content }, { role: 'user', content: results });
    }
  } finally {
    cancelDeadline();
    cancel?.removeEventListener('abort', onCancel);
  }
}
