/**
 * What one invocation's conversation meets: a model that answers call by call (replies of every kind,
 * provider faults of every fault class of docs/rules.md rules 05–06, usage reported or not, latency
 * past the attempt timeout, retry-after past the deadline), tools that answer, throw or take their time
 * (with or without honouring their signal), and a judge that accepts, rejects, throws or dawdles. Each
 * draws from its own seeded stream, so the episode replays exactly under the same seed.
 *
 * The episode also keeps what the ledger cannot tell from its events (they hold no conversation body):
 * the kind of every model response and how many handlers ran, for the conversation invariants.
 */
import { FAULT_CLASSES, isRetryable, type FaultClass } from '../runtime/faults';
import type { ScriptedCall, ScriptedOutcome } from '../runtime/scripted-provider';
import type { StopReason, TextBlock, ToolUseBlock, Usage } from '../runtime/provider.port';
import type { JudgeContext, ToolContext, Verdict } from '../runtime/tool.types';
import type { Prng } from './prng';
import type { AnswerStyle } from './scenario';
import type { SimulationClock } from './simulation-clock';
import { MAX_CALLS_PER_MODEL_TURN, MAX_MODEL_CALLS_PER_INVOCATION } from './simulation.bounds';
import type { Tally } from './tally';

/** The answer every judge accepts. */
export const RIGHT_ANSWER = 42;
/** A retry-after no conversation can wait for: longer than any drawn `totalTimeMs`. */
const RETRY_AFTER_BEYOND_DEADLINE_MS = 3_600_000;
/** Share of episodes whose model only talks and fails (see EpisodeProfile.marathon), in percent. */
const MARATHON_PERCENT = 8;
/** Length of an oversized handler error message, in characters (the runtime bounds what reaches the model). */
const OVERSIZED_ERROR_CHARS = 5_000;

/** What one model call produced, as the credit-guard check needs it. */
export interface ModelCallRecord {
  readonly move: ModelMove;
  /** A reply whose content asks for at least one tool call (docs/rules.md step 8 applies to its turn). */
  readonly toolRequesting: boolean;
}

type ModelMove =
  | 'answer-right'
  | 'answer-wrong'
  | 'answer-malformed'
  | 'answer-beside-tools'
  | 'lookup'
  | 'lookup-malformed'
  | 'note-alone'
  | 'note-in-batch'
  | 'tool-without-handler'
  | 'unknown-tool'
  | 'duplicate-call-id'
  | 'reused-call-id'
  | 'text'
  | 'pause'
  | 'refusal'
  | 'max-tokens'
  | 'fault';

/** A model reply's stop reason and content, before its usage is drawn. */
interface ModelReplyShape {
  readonly stopReason: StopReason;
  readonly content: (TextBlock | ToolUseBlock)[];
}

const MOVE_WEIGHTS: Readonly<Record<ModelMove, number>> = {
  'answer-right': 14,
  'answer-wrong': 5,
  'answer-malformed': 2,
  'answer-beside-tools': 3,
  lookup: 22,
  'lookup-malformed': 3,
  'note-alone': 4,
  'note-in-batch': 1,
  'tool-without-handler': 2,
  'unknown-tool': 2,
  'duplicate-call-id': 1,
  'reused-call-id': 1,
  text: 6,
  pause: 2,
  refusal: 1,
  'max-tokens': 2,
  fault: 0, // set per episode from its fault rate
};

/** HTTP statuses a provider answers each fault class with (undefined: no HTTP response at all). */
const STATUSES: Readonly<Record<FaultClass, readonly (number | undefined)[]>> = {
  timeout: [408, undefined],
  rate_limited: [429],
  credit_exhausted: [402, 429, 400, 403],
  overloaded: [529],
  server_error: [500, 502, 503, 504],
  connection: [undefined],
  conflict: [409],
  malformed_request: [400, 404, 413, 422],
  unauthorized: [401, 403],
  cancelled: [undefined],
};

/** How an episode behaves overall, drawn once per invocation. */
interface EpisodeProfile {
  readonly faultWeight: number;
  /** Extra weight of text-only turns: a chatty model runs longer. */
  readonly chattiness: number;
  /**
   * Only text and faults, never an answer or a tool: the conversation runs to its turn limit, and on
   * a long publication past the 64 retained attempts (docs/rules.md rule 07).
   */
  readonly marathon: boolean;
  /** Percent of replies and faults that report no usage. */
  readonly noUsagePercent: number;
  readonly tokenScale: number;
  readonly slowPercent: number;
}

export class SimulatedEpisode {
  readonly modelCalls: ModelCallRecord[] = [];
  /** Clock time of the first model request: the conversation's start, from which its own deadline runs. */
  conversationStartedAtMs: number | undefined;
  handlerRuns = 0;
  judgeRuns = 0;
  private nextCallId = 1;
  private readonly issuedCallIds: string[] = [];
  private readonly profile: EpisodeProfile;
  private readonly model: Prng;
  private readonly tools: Prng;
  private readonly judge: Prng;

  constructor(
    readonly tag: string,
    readonly style: AnswerStyle,
    prng: Prng,
    private readonly clock: SimulationClock,
    private readonly tally: Tally,
  ) {
    const shape = prng.fork('profile');
    this.profile = {
      faultWeight: shape.pick([0, 6, 15, 40]),
      chattiness: shape.chance(15) ? 60 : 0,
      marathon: shape.chance(MARATHON_PERCENT),
      noUsagePercent: shape.pick([0, 10, 50, 100]),
      tokenScale: shape.pick([100, 2_000, 20_000]),
      slowPercent: shape.pick([0, 5, 20]),
    };
    this.model = prng.fork('model');
    this.tools = prng.fork('tools');
    this.judge = prng.fork('judge');
  }

  /** The next model response (a ScriptedProvider step); latency is played by the provider on the clock. */
  respond(call: ScriptedCall): ScriptedOutcome {
    if (this.modelCalls.length >= MAX_MODEL_CALLS_PER_INVOCATION) {
      throw new Error(`episode ${this.tag}: more than ${MAX_MODEL_CALLS_PER_INVOCATION} model calls`);
    }
    this.conversationStartedAtMs ??= this.clock.now();
    const prng = this.model;
    const move = this.profile.marathon
      ? prng.weighted<'text' | 'pause' | 'fault'>({ text: 10, pause: 1, fault: 4 })
      : prng.weighted({ ...MOVE_WEIGHTS, fault: this.profile.faultWeight, text: MOVE_WEIGHTS.text + this.profile.chattiness });
    const latencyMs = this.latency(call);
    this.tally.add(`model.${move}`);
    if (move === 'fault') return this.fault(latencyMs, this.profile.marathon);

    const { stopReason, content } = this.replyOf(move, prng);
    this.modelCalls.push({ move, toolRequesting: content.some((block) => block.type === 'tool_use') });
    return { reply: { stopReason, content, usage: this.usage() }, latencyMs };
  }

  /** The reply a move makes: an answer, tool calls, or a turn that stops without either. */
  private replyOf(move: Exclude<ModelMove, 'fault'>, prng: Prng): ModelReplyShape {
    const textAnswer = (text: string): TextBlock => ({ type: 'text', text });
    switch (move) {
      case 'answer-right':
      case 'answer-wrong':
      case 'answer-malformed':
      case 'answer-beside-tools':
        return this.answerReply(move, prng);
      case 'text':
        return { stopReason: 'end_turn', content: [textAnswer('thinking out loud')] };
      case 'pause':
        return { stopReason: 'pause_turn', content: [textAnswer('one moment')] };
      case 'refusal':
        return { stopReason: 'refusal', content: [textAnswer('I cannot help with that.')] };
      case 'max-tokens':
        return { stopReason: 'max_tokens', content: prng.chance(50) ? [textAnswer('the answer is')] : [this.toolUse('submit_answer', { value: RIGHT_ANSWER })] };
      default:
        return { stopReason: 'tool_use', content: this.toolCalls(move, prng) };
    }
  }

  /** An answer, right, wrong or malformed, alone or beside tool calls, in the episode's answer style. */
  private answerReply(move: 'answer-right' | 'answer-wrong' | 'answer-malformed' | 'answer-beside-tools', prng: Prng): ModelReplyShape {
    const answer = (value: unknown): ToolUseBlock => this.toolUse('submit_answer', { value });
    const inText = this.style === 'text-answer';
    switch (move) {
      case 'answer-right':
      case 'answer-wrong': {
        const value = move === 'answer-right' ? RIGHT_ANSWER : RIGHT_ANSWER + prng.int(1, 9);
        return inText ? { stopReason: 'end_turn', content: [{ type: 'text', text: String(value) }] } : { stopReason: 'tool_use', content: [answer(value)] };
      }
      case 'answer-malformed':
        return { stopReason: 'tool_use', content: inText ? [this.toolUse('lookup', { q: 7 })] : [answer('forty-two')] };
      case 'answer-beside-tools':
        return {
          stopReason: 'tool_use',
          content: inText
            ? [{ type: 'text', text: 'looking' }, this.toolUse('lookup', { q: 'x' })]
            : [this.toolUse('lookup', { q: 'x' }), answer(RIGHT_ANSWER), this.toolUse('lookup', { q: 'y' })],
        };
    }
  }

  /** Tool calls, well formed or not: lookups, notes, tools without a handler or unknown, call ids repeated. */
  private toolCalls(move: 'lookup' | 'lookup-malformed' | 'note-alone' | 'note-in-batch' | 'tool-without-handler' | 'unknown-tool' | 'duplicate-call-id' | 'reused-call-id', prng: Prng): ToolUseBlock[] {
    switch (move) {
      case 'lookup': {
        const calls = prng.int(1, MAX_CALLS_PER_MODEL_TURN);
        const content: ToolUseBlock[] = [];
        for (let index = 0; index < calls; index++) content.push(this.toolUse('lookup', { q: `q${index}` }));
        return content;
      }
      case 'lookup-malformed':
        return [this.toolUse('lookup', { q: 7 })];
      case 'note-alone':
        return [this.toolUse('note', { text: 'remember' })];
      case 'note-in-batch':
        return [this.toolUse('lookup', { q: 'x' }), this.toolUse('note', { text: 'remember' })];
      case 'tool-without-handler':
        return [this.toolUse('archive', {})];
      case 'unknown-tool':
        return [this.toolUse('teleport', {})];
      case 'duplicate-call-id': {
        const first = this.toolUse('lookup', { q: 'a' });
        return [first, { ...first, input: { q: 'b' } }];
      }
      case 'reused-call-id': {
        const earlier = this.issuedCallIds.length === 0 ? undefined : prng.pick(this.issuedCallIds);
        return [earlier === undefined ? this.toolUse('lookup', { q: 'a' }) : { type: 'tool_use', id: earlier, name: 'lookup', input: { q: 'a' } }];
      }
    }
  }

  /** Handler of the read tool `lookup` and the write tool `note`. */
  async runTool(name: string, context: ToolContext): Promise<unknown> {
    this.handlerRuns += 1;
    const prng = this.tools;
    const behaviour = prng.weighted({ answer: 60, object: 5, throw: 10, 'throw-oversized': 3, 'slow-honouring-signal': 12, 'slow-ignoring-signal': 5, 'slow-then-throw': 5 });
    this.tally.add(`tool.${behaviour}`);
    switch (behaviour) {
      case 'answer':
        return name === 'lookup' ? String(RIGHT_ANSWER) : 'noted';
      case 'object':
        return { value: RIGHT_ANSWER, source: name };
      case 'throw':
        throw new Error(`${name} is unavailable right now`);
      case 'throw-oversized':
        throw new Error(`${name} failed: ${'x'.repeat(OVERSIZED_ERROR_CHARS)}`);
      case 'slow-honouring-signal':
        await this.clock.sleep(prng.int(100, 40_000), context.signal);
        return String(RIGHT_ANSWER);
      case 'slow-ignoring-signal':
        await this.clock.sleep(prng.int(100, 40_000));
        return String(RIGHT_ANSWER);
      case 'slow-then-throw':
        await this.clock.sleep(prng.int(100, 5_000), context.signal);
        throw new Error(`${name} timed out upstream`);
    }
  }

  /** The judge of `submit_answer` (answer-tool style) or of a text answer (text-answer style). */
  async judgeAnswer(answer: unknown, context: JudgeContext): Promise<Verdict> {
    this.judgeRuns += 1;
    const prng = this.judge;
    const behaviour = prng.weighted({ fair: 70, throw: 8, 'slow-then-fair': 10, 'garbled-verdict': 5, 'always-reject': 7 });
    this.tally.add(`judge.${behaviour}`);
    const fair = (): Verdict => {
      const value = typeof answer === 'string' ? Number(answer.trim()) : (answer as { value?: unknown } | null)?.value;
      return value === RIGHT_ANSWER ? { accepted: true } : { accepted: false, feedback: `${String(value)} is not the answer` };
    };
    switch (behaviour) {
      case 'fair':
        return fair();
      case 'throw':
        throw new Error('the judge crashed');
      case 'slow-then-fair':
        await this.clock.sleep(prng.int(50, 30_000), context.signal);
        return fair();
      case 'garbled-verdict':
        return { accepted: 'yes' } as unknown as Verdict;
      case 'always-reject':
        return { accepted: false, feedback: 'not good enough' };
    }
  }

  /** A provider fault; a marathon model's are all retried and wait no longer than the conversation may. */
  private fault(latencyMs: number | undefined, retriedOnly: boolean): ScriptedOutcome {
    const prng = this.model;
    const fault = prng.pick(retriedOnly ? FAULT_CLASSES.filter(isRetryable) : FAULT_CLASSES);
    const usage = prng.chance(35) ? this.usage() : undefined;
    let retryAfterMs: number | undefined;
    if (!retriedOnly && prng.chance(30)) {
      retryAfterMs = prng.chance(50) ? prng.int(1, 3_000) : RETRY_AFTER_BEYOND_DEADLINE_MS;
      this.tally.add(retryAfterMs === RETRY_AFTER_BEYOND_DEADLINE_MS ? 'provider.retry-after-beyond-deadline' : 'provider.retry-after');
    }
    this.tally.add(`provider.fault.${fault}`);
    if (usage !== undefined) this.tally.add('provider.usage-on-failed-attempt');
    this.modelCalls.push({ move: 'fault', toolRequesting: false });
    const httpStatus = prng.pick(STATUSES[fault]);
    return {
      fault,
      message: `simulated ${fault}`,
      ...(httpStatus === undefined ? {} : { httpStatus }),
      ...(usage === undefined ? {} : { usage }),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...(fault === 'timeout' && httpStatus === undefined ? { timedOut: true } : {}),
      ...(latencyMs === undefined ? {} : { latencyMs }),
    };
  }

  /** Usually quick, sometimes slower than the attempt may take (the runtime then times it out). */
  private latency(call: ScriptedCall): number | undefined {
    const prng = this.model;
    if (prng.chance(this.profile.slowPercent)) {
      this.tally.add('provider.latency-past-attempt-timeout');
      return call.timeoutMs + prng.int(1, 5_000);
    }
    return prng.chance(40) ? undefined : prng.int(1, 2_000);
  }

  private usage(): Usage | undefined {
    const prng = this.model;
    if (prng.chance(this.profile.noUsagePercent)) return undefined;
    const scale = this.profile.tokenScale;
    return {
      inputTokens: prng.int(0, scale),
      outputTokens: prng.int(0, Math.ceil(scale / 5)),
      cacheWriteTokens: prng.chance(20) ? prng.int(0, scale) : 0,
      cacheReadTokens: prng.chance(20) ? prng.int(0, scale) : 0,
      cacheWrite1hTokens: 0,
      webSearchRequests: 0,
    };
  }

  private toolUse(name: string, input: unknown): ToolUseBlock {
    const id = `call-${this.nextCallId++}`;
    this.issuedCallIds.push(id);
    return { type: 'tool_use', id, name, input };
  }
}
