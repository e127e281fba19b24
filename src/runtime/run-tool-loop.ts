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
import { executeWithRetry, type TurnExecution } from './execute-with-retry';
import type { FaultClass } from './faults';
import { assertPrices } from './pricing';
import type { ContentBlock, Message, Provider, ProviderFeatures, ProviderResponse, TextBlock, ToolDefinition, ToolResultBlock, ToolUseBlock, Usage } from './provider.port';
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

function definitionOf(tool: ToolSpec | AnswerToolSpec): ToolDefinition {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    stable: true,
    ...(tool.cacheTtl === undefined ? {} : { cacheTtl: tool.cacheTtl }),
  };
}

/** A model turn as steps 6–11 read it. */
interface Turn {
  readonly response: ProviderResponse;
  readonly calls: readonly ToolUseBlock[];
  /** A refused or cut-off response is never an answer, so it is never judged. */
  readonly cutOff: boolean;
  /** The judge's feedback for each rejected answer call, by the call's index (step 6, read at step 11). */
  answerFeedback: string[] | undefined;
}

/**
 * Step 6 of a turn so far: an answer accepted, the conversation stopped, no answer accepted, or a judge
 * still judging the call at `index` (the loop awaits `verdict` and resumes the step there).
 */
type AnswerJudgement =
  | { readonly kind: 'accepted'; readonly answer: unknown }
  | { readonly kind: 'stopped' }
  | { readonly kind: 'none' }
  | { readonly kind: 'judging'; readonly index: number; readonly verdict: Promise<JudgeOutcome> };

const STOPPED_JUDGEMENT: AnswerJudgement = { kind: 'stopped' };
const NO_ANSWER: AnswerJudgement = { kind: 'none' };

/** What a text-only turn asks for next (step 7): another request as it is, the answer tool's reminder, or judging its text. */
type TextTurn = { readonly kind: 'paused' } | { readonly kind: 'remind' } | { readonly kind: 'final'; readonly text: string };

const PAUSED: TextTurn = { kind: 'paused' };
const REMIND: TextTurn = { kind: 'remind' };

/** Step 11's batch once started: each call's result, and the handlers still running (if any). */
interface StartedBatch {
  readonly results: ToolResultBlock[];
  readonly running: Promise<unknown> | undefined;
}

/**
 * One conversation's state and the steps of its turns (docs/rules.md "The order of one turn"), one
 * method per step. The loop in `runToolLoop` calls them in order and keeps every decision that ends
 * the conversation.
 */
class Conversation {
  readonly limits: ConversationLimits;
  private readonly catalog: ReturnType<typeof buildToolCatalog>;
  private readonly toolDefinitions: ToolDefinition[];
  private readonly system: readonly TextBlock[];
  private readonly random: RandomSource;
  private readonly messages: Message[];
  private readonly seenCallIds = new Set<string>();
  private readonly ledger: AttemptLedger;
  private readonly startedAtMs: number;
  private readonly deadlineMs: number;
  private readonly stop: ConversationStop = new Stopper();
  private readonly cancelDeadline: () => void;
  private readonly onCancel = (): void => this.stop.stop('cancelled', this.input.signal?.reason);
  private turnsUsed = 0;
  private toolCallsUsed = 0;

  constructor(private readonly input: ToolLoopInput) {
    const { limits, clock, answerTool } = input;
    this.limits = limits;
    this.catalog = buildToolCatalog(input.tools, answerTool);
    this.toolDefinitions = input.tools.map(definitionOf);
    if (answerTool !== undefined) this.toolDefinitions.push(definitionOf(answerTool));
    this.system = input.system ?? [];
    this.random = input.random ?? Math.random;
    this.messages = [...input.messages];
    for (const message of input.messages) for (const call of toolUsesOf(message.content)) this.seenCallIds.add(call.id);
    this.ledger = new AttemptLedger(input.onAttempt);
    const nowMs = clock.now();
    this.startedAtMs = Math.min(input.startedAtMs ?? nowMs, nowMs);
    this.deadlineMs = this.startedAtMs + limits.totalTimeMs;
    this.cancelDeadline = clock.setTimer(Math.max(0, this.deadlineMs - nowMs), () =>
      this.stop.stop('deadline', timeoutReason(`conversation deadline of ${limits.totalTimeMs} ms passed`)),
    );
    if (input.signal?.aborted) this.onCancel();
    else input.signal?.addEventListener('abort', this.onCancel, { once: true });
  }

  /** Stops the deadline timer and the cancellation listener: the conversation is over. */
  close(): void {
    this.cancelDeadline();
    this.input.signal?.removeEventListener('abort', this.onCancel);
  }

  /** 1. Cancellation: the caller's signal fired. Never repairable, never retried. */
  cancelled(): boolean {
    return this.input.signal?.aborted === true;
  }

  /** 2. Turn budget (BR-01): exactly maxTurns requests, never more. */
  noTurnLeft(): boolean {
    return this.turnsUsed >= this.limits.maxTurns;
  }

  /** 3. Time budget (BR-04): nothing is sent without time left (the attempt timeout is capped in step 4). */
  noTimeLeft(): boolean {
    return this.deadlineMs - this.input.clock.now() <= 0;
  }

  /**
   * 4. Send with retries (BR-05, BR-06). Every attempt is reported as it happens (BR-07) and priced
   * then: step 5 is AttemptLedger.record, which adds each attempt's rounded price to the spend.
   */
  send(): Promise<TurnExecution> {
    const { input, limits } = this;
    this.turnsUsed += 1;
    return executeWithRetry({
      provider: input.provider,
      request: {
        model: input.model,
        system: this.system,
        messages: this.messages.slice(),
        tools: this.toolDefinitions,
        maxOutputTokens: limits.maxOutputTokens,
        ...(input.providerFeatures === undefined ? {} : { features: input.providerFeatures }),
      },
      clock: input.clock,
      turn: this.turnsUsed,
      deadlineMs: this.deadlineMs,
      attemptTimeoutMs: limits.attemptTimeoutMs,
      maxAttemptsPerTurn: limits.maxAttemptsPerTurn,
      prices: input.prices,
      random: this.random,
      signal: input.signal,
      report: this.ledger.record,
    });
  }

  /** Step 4's ending when no response came: cancelled, out of time, or failed, with the last fault. */
  unanswered(execution: Extract<TurnExecution, { ok: false }>): ToolLoopResult {
    if (execution.ending === 'cancelled') return this.finish('cancelled', { fault: execution.fault });
    if (execution.ending === 'time_limit') return this.finish('time_limit', { endingLimit: 'totalTimeMs', fault: execution.fault });
    return this.finish('failed', { fault: execution.fault });
  }

  /** The response as steps 6–11 read it. */
  turnOf(response: ProviderResponse): Turn {
    const cutOff = response.stopReason === 'refusal' || response.stopReason === 'max_tokens' || response.stopReason === 'context_window_exceeded';
    return { response, calls: toolUsesOf(response.content), cutOff, answerFeedback: undefined };
  }

  /**
   * 6. Final answer first (BR-14): the answer calls are judged in request order, and an accepted one
   * completes the conversation whatever else the turn asked or cost. Resumes at `from` with the
   * verdict `judged` there when a judge answered asynchronously; a synchronous judge is read at once.
   */
  judgeAnswers(turn: Turn, from = 0, judged?: JudgeOutcome): AnswerJudgement {
    const { answerTool } = this.input;
    if (answerTool === undefined || turn.cutOff) return NO_ANSWER;
    let verdict = judged;
    for (let index = from; index < turn.calls.length; index++) {
      const call = turn.calls[index]!;
      if (verdict === undefined) {
        if (call.name !== answerTool.name) continue;
        if (this.stop.cause !== undefined) return STOPPED_JUDGEMENT;
        const entry = this.catalog.entries.get(answerTool.name)!;
        const pending = entry.validate(call.input)
          ? judgeRaced(() => answerTool.judge(call.input, new CallContext(this.stop, call.id)), this.stop)
          : { accepted: false as const, feedback: malformedArgumentsText(call.name, entry.validate.errors) };
        if (pending instanceof Promise) return { kind: 'judging', index, verdict: pending };
        verdict = pending;
      }
      if (verdict === STOPPED) return STOPPED_JUDGEMENT;
      if (verdict.accepted) return { kind: 'accepted', answer: call.input };
      (turn.answerFeedback ??= [])[index] = verdict.feedback;
      verdict = undefined;
    }
    return NO_ANSWER;
  }

  /** 7. Terminal responses (BR-11): a refusal, or output cut off, ends the conversation. */
  terminalOutcome(turn: Turn): 'refused_by_model' | 'incomplete' | undefined {
    if (turn.response.stopReason === 'refusal') return 'refused_by_model';
    return turn.cutOff ? 'incomplete' : undefined;
  }

  /** 7, text-only turns: keeps the text in the conversation and says what the turn asks for next. */
  textTurn(turn: Turn): TextTurn {
    const { content } = turn.response;
    if (content.length > 0) this.messages.push({ role: 'assistant', content });
    if (turn.response.stopReason === 'pause_turn') return PAUSED;
    if (this.input.answerTool !== undefined) return REMIND;
    return { kind: 'final', text: textOf(content) };
  }

  /** 7, a text-only turn's final text, judged when there is a text judge. */
  judgeText(text: string): JudgeOutcome | Promise<JudgeOutcome> {
    return judgeRaced(() => this.input.textJudge!(text, new TextJudgeContext(this.stop)), this.stop);
  }

  /** Tells the model something before its next turn (the answer tool's reminder, a judge's feedback). */
  tell(text: string): void {
    this.messages.push(userText(text));
  }

  /** The answer tool's reminder after a text-only turn. */
  remind(): void {
    this.tell(answerToolReminder(this.input.answerTool!.name));
  }

  /**
   * 8. Credit guard (BR-03), on every turn after which another request would go out: strictly over the
   * hold stops; spending exactly the hold goes on (FND-PFM-LLM-061).
   */
  overHold(): boolean {
    return this.ledger.priceCredits > this.input.creditHold;
  }

  /** 9. Tool budget (BR-02): the whole batch fits or none of it runs. A rejected answer call counts. */
  batchOverBudget(turn: Turn): boolean {
    return turn.calls.length > this.limits.maxToolCalls - this.toolCallsUsed;
  }

  /** 10. Per-call preflight (docs/rules.md "Rules for a batch of tool calls"), before anything runs. */
  preflight(turn: Turn): ReturnType<typeof preflightToolCalls> {
    const preflight = preflightToolCalls(turn.calls, this.catalog, this.seenCallIds);
    if (preflight.ok) for (const call of turn.calls) this.seenCallIds.add(call.id);
    return preflight;
  }

  /** 11, before anything runs: stopped (cancelled or at the deadline) or past the deadline. */
  stopped(): boolean {
    return this.stop.cause !== undefined;
  }

  pastDeadline(): boolean {
    return this.input.clock.now() >= this.deadlineMs;
  }

  /**
   * 11. Run (BR-08/09/10/15): the batch's calls count against the budget once it starts; each call gets
   * its result (a handler's, an answer's feedback, or a preflight error), synchronous handlers at once.
   */
  startBatch(turn: Turn, preflight: Extract<ReturnType<typeof preflightToolCalls>, { ok: true }>): StartedBatch {
    const { calls } = turn;
    this.toolCallsUsed += calls.length;
    const results = new Array<ToolResultBlock>(calls.length);
    const running: Promise<void>[] = [];
    for (let index = 0; index < calls.length; index++) {
      const call = calls[index]!;
      const status = preflight.calls[index]!;
      if (status.kind === 'run') {
        const started = startHandler(status.entry, call, this.stop);
        if (started instanceof Promise) {
          running.push(
            started.then((result) => {
              results[index] = result;
            }),
          );
        } else results[index] = started;
      } else if (status.kind === 'answer') {
        results[index] = errorResult(call.id, turn.answerFeedback?.[index] ?? ANSWER_REJECTED_FEEDBACK);
      } else {
        results[index] = errorResult(call.id, status.text);
      }
    }
    return { results, running: running.length === 0 ? undefined : running.length === 1 ? running[0] : Promise.all(running) };
  }

  /** The handlers still running, raced against the deadline and the caller's cancellation (rejects when stopped). */
  awaitHandlers(running: Promise<unknown>): Promise<unknown> {
    return this.stop.race<unknown>(running);
  }

  /** 11. Answer: ONE message with a result for each call id, in request order. */
  answer(turn: Turn, results: ToolResultBlock[]): void {
    this.messages.push({ role: 'assistant', content: turn.response.content }, { role: 'user', content: results });
  }

  /** How a stop that came while a judge or handler ran ends the conversation. */
  finishStopped(): ToolLoopResult {
    return this.stop.cause === 'cancelled' ? this.finish('cancelled') : this.finish('time_limit', { endingLimit: 'totalTimeMs' });
  }

  finish(outcome: Outcome, extra: { endingLimit?: EndingLimit; fault?: FaultClass; violation?: BatchViolation; answer?: unknown } = {}): ToolLoopResult {
    const { turnsUsed, toolCallsUsed, ledger } = this;
    // The bounds money depends on; a breach is a bug, never a result.
    if (turnsUsed > this.limits.maxTurns || toolCallsUsed > this.limits.maxToolCalls) {
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
      elapsedMs: this.input.clock.now() - this.startedAtMs,
    };
  }
}

/**
 * Runs one bounded conversation to its outcome. Rejects (before sending anything) on invalid limits,
 * prices, hold or tool definitions; rejects mid-way only when `onAttempt` throws, a provider breaks its
 * port by throwing something other than a ProviderFault, or a provider reports invalid usage.
 *
 * Each turn takes docs/rules.md's steps in order, one method of Conversation each; every decision that
 * ends the conversation is an `if` here.
 */
export async function runToolLoop(input: ToolLoopInput): Promise<ToolLoopResult> {
  assertInput(input);
  const c = new Conversation(input);
  try {
    for (;;) {
      if (c.cancelled()) return c.finish('cancelled'); // 1
      if (c.noTurnLeft()) return c.finish('turn_limit', { endingLimit: 'maxTurns' }); // 2
      if (c.noTimeLeft()) return c.finish('time_limit', { endingLimit: 'totalTimeMs' }); // 3
      const execution = await c.send(); // 4, and 5 as each attempt is reported
      if (!execution.ok) return c.unanswered(execution);
      const turn = c.turnOf(execution.response);

      let judged = c.judgeAnswers(turn); // 6
      while (judged.kind === 'judging') judged = c.judgeAnswers(turn, judged.index, await judged.verdict);
      if (judged.kind === 'stopped') return c.finishStopped();
      if (judged.kind === 'accepted') return c.finish('completed', { answer: judged.answer });

      const terminal = c.terminalOutcome(turn); // 7
      if (terminal !== undefined) return c.finish(terminal);
      if (turn.calls.length === 0) {
        const next = c.textTurn(turn);
        if (next.kind !== 'final') {
          // 8 on text turns too: a pause_turn or a reminder sends another request.
          if (c.overHold()) return c.finish('credit_limit', { endingLimit: 'creditHold' });
          if (next.kind === 'remind') c.remind();
          continue;
        }
        if (input.textJudge === undefined) return c.finish('completed', { answer: next.text });
        if (c.stopped()) return c.finishStopped();
        let verdict = c.judgeText(next.text);
        if (verdict instanceof Promise) verdict = await verdict;
        if (verdict === STOPPED) return c.finishStopped();
        if (verdict.accepted) return c.finish('completed', { answer: next.text });
        if (c.overHold()) return c.finish('credit_limit', { endingLimit: 'creditHold' }); // 8
        c.tell(verdict.feedback);
        continue;
      }

      if (c.overHold()) return c.finish('credit_limit', { endingLimit: 'creditHold' }); // 8
      if (c.batchOverBudget(turn)) return c.finish('tool_limit', { endingLimit: 'maxToolCalls' }); // 9
      // With no turn left, nobody could read the results: do not run the handlers.
      if (c.noTurnLeft()) return c.finish('turn_limit', { endingLimit: 'maxTurns' });
      const preflight = c.preflight(turn); // 10
      if (!preflight.ok) return c.finish('protocol_error', { violation: preflight.violation });

      if (c.stopped()) return c.finishStopped(); // 11
      if (c.pastDeadline()) return c.finish('time_limit', { endingLimit: 'totalTimeMs' });
      const batch = c.startBatch(turn, preflight);
      if (batch.running !== undefined) {
        try {
          await c.awaitHandlers(batch.running);
        } catch {
          return c.finishStopped();
        }
      }
      c.answer(turn, batch.results);
    }
  } finally {
    c.close();
  }
}
