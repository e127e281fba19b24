/**
 * Shared fixtures for the runtime specs: a virtual clock, limits and prices with easy arithmetic
 * (1 credit per token), counting tools and a judged answer tool.
 */
import {
  ScriptedProvider,
  VirtualClock,
  runToolLoop,
  type AnswerToolSpec,
  type AttemptRecord,
  type ConversationLimits,
  type Message,
  type Prices,
  type ScriptedStep,
  type ToolLoopInput,
  type ToolLoopResult,
  type ToolSpec,
  type Verdict,
} from '../../src/runtime';

export const LIMITS: ConversationLimits = {
  maxTurns: 10,
  maxToolCalls: 20,
  totalTimeMs: 60_000,
  attemptTimeoutMs: 10_000,
  maxOutputTokens: 1_024,
  maxAttemptsPerTurn: 3,
};

/** One credit per input or output token: a turn's price is its token count. */
export const ONE_CREDIT_PER_TOKEN: Prices = {
  inputPerMTok: 1_000_000,
  outputPerMTok: 1_000_000,
  cacheWritePerMTok: 0,
  cacheReadPerMTok: 0,
};

export { usage } from '../support/scripted-feature';

export const firstJitter = (): number => 0;

export function ask(text = 'What is 6*7?'): Message[] {
  return [{ role: 'user', content: [{ type: 'text', text }] }];
}

// Shared schema objects: the runtime compiles each schema object once, so fixtures reuse them.
const EXPRESSION_SCHEMA = { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] };
const ANSWER_SCHEMA = { type: 'object', properties: { value: { type: 'number' } }, required: ['value'], additionalProperties: false };

export interface CountingTool extends ToolSpec {
  /** The inputs the handler ran with, in order. */
  readonly runs: unknown[];
}

/** A tool whose handler records each run and returns `result` (or whatever `behaviour` does). */
export function countingTool(
  name: string,
  options: {
    effect?: 'read' | 'write';
    result?: unknown;
    behaviour?: (input: unknown, context: { signal: AbortSignal; callId: string }) => unknown;
    schema?: Record<string, unknown>;
    withoutHandler?: boolean;
  } = {},
): CountingTool {
  const runs: unknown[] = [];
  const tool: CountingTool = {
    name,
    description: `the ${name} tool`,
    inputSchema: options.schema ?? EXPRESSION_SCHEMA,
    effect: options.effect ?? 'read',
    runs,
  };
  if (options.withoutHandler === true) return tool;
  return {
    ...tool,
    handler(input: unknown, context: { signal: AbortSignal; callId: string }): unknown {
      runs.push(input);
      return options.behaviour ? options.behaviour(input, context) : (options.result ?? 'ok');
    },
  };
}

export interface JudgedAnswerTool extends AnswerToolSpec {
  readonly judged: unknown[];
}

/** `submit_answer({ value: number })`, judged by `judge` (default: accept 42). */
export function submitAnswer(judge?: (input: { value: number }) => Verdict | Promise<Verdict>): JudgedAnswerTool {
  const judged: unknown[] = [];
  return {
    name: 'submit_answer',
    description: 'Give the final answer.',
    inputSchema: ANSWER_SCHEMA,
    judged,
    judge(input: unknown): Verdict | Promise<Verdict> {
      judged.push(input);
      const answer = input as { value: number };
      if (judge) return judge(answer);
      return answer.value === 42 ? { accepted: true } : { accepted: false, feedback: `${answer.value} is not the value.` };
    },
  };
}

export interface Harness {
  readonly clock: VirtualClock;
  readonly provider: ScriptedProvider;
  readonly attempts: AttemptRecord[];
  readonly run: (overrides?: Partial<ToolLoopInput>) => Promise<ToolLoopResult>;
}

/** A scripted provider on a virtual clock, and a runner with sensible defaults. */
export function harness(steps: Iterable<ScriptedStep>, defaults: Partial<ToolLoopInput> = {}): Harness {
  const clock = new VirtualClock();
  const provider = new ScriptedProvider(steps, { clock });
  const attempts: AttemptRecord[] = [];
  const run = (overrides: Partial<ToolLoopInput> = {}): Promise<ToolLoopResult> =>
    runToolLoop({
      messages: ask(),
      tools: [],
      limits: LIMITS,
      prices: ONE_CREDIT_PER_TOKEN,
      creditHold: 1_000_000,
      model: 'test-model',
      provider,
      clock,
      random: firstJitter,
      onAttempt: (record) => {
        attempts.push(record);
      },
      ...defaults,
      ...overrides,
    });
  return { clock, provider, attempts, run };
}

/** The tool results the model received in request `index` (its last user message). */
export function toolResultsSent(provider: ScriptedProvider, index: number) {
  const request = provider.requests[index];
  if (request === undefined) throw new Error(`no request #${index}`);
  const last = request.messages[request.messages.length - 1]!;
  return last.content.filter((block) => block.type === 'tool_result');
}
