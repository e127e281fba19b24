import fc from 'fast-check';
import {
  FAULT_CLASSES,
  ScriptedProvider,
  VirtualClock,
  priceAttempt,
  runToolLoop,
  scriptedFault,
  scriptedText,
  type AttemptRecord,
  type ConversationLimits,
  type FaultClass,
  type Prices,
  type Provider,
  type ScriptedStep,
  type StopReason,
  type ToolUseBlock,
} from '../../src/runtime';
import { ask, countingTool, submitAnswer } from './fixtures';

const PRICES: Prices = { inputPerMTok: 250_000, outputPerMTok: 1_000_000, cacheWritePerMTok: 300_000, cacheReadPerMTok: 25_000 };
// Terminal stop reasons are rarer, so conversations get far enough to meet the budgets.
const STOP_REASONS: StopReason[] = [
  'tool_use',
  'tool_use',
  'tool_use',
  'tool_use',
  'end_turn',
  'end_turn',
  'max_tokens',
  'refusal',
  'pause_turn',
  'stop_sequence',
  'context_window_exceeded',
];
// calc (a runnable read tool) is the most likely, so batches often get as far as running.
const TOOL_NAMES = ['calc', 'calc', 'calc', 'save', 'ghost', 'nope', 'submit_answer'] as const;

const usageArb = fc.option(
  fc.record({ inputTokens: fc.nat(400), outputTokens: fc.nat(200), cacheWriteTokens: fc.nat(50), cacheWrite1hTokens: fc.nat(50), cacheReadTokens: fc.nat(500), webSearchRequests: fc.nat(3) }),
  { nil: undefined },
);
const callArb = fc.record({
  name: fc.constantFrom(...TOOL_NAMES),
  sharedId: fc.option(fc.constantFrom('shared-a', 'shared-b'), { nil: undefined, freq: 6 }),
  valid: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  value: fc.constantFrom(41, 42),
});
const stepArb = fc.oneof(
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fault' as const), fault: fc.constantFrom<FaultClass>(...FAULT_CLASSES), usage: usageArb }) },
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('reply' as const),
      stopReason: fc.constantFrom(...STOP_REASONS),
      calls: fc.array(callArb, { maxLength: 4 }),
      usage: usageArb,
      latencyMs: fc.constantFrom(0, 0, 0, 700, 12_000),
    }),
  },
);
const scenarioArb = fc.record({
  limits: fc.record({
    maxTurns: fc.integer({ min: 0, max: 6 }),
    maxToolCalls: fc.integer({ min: 0, max: 8 }),
    totalTimeMs: fc.constantFrom(0, 2_000, 30_000, 120_000, 120_000, 120_000),
    attemptTimeoutMs: fc.constantFrom(5_000, 10_000),
    maxOutputTokens: fc.constant(256),
    maxAttemptsPerTurn: fc.integer({ min: 1, max: 3 }),
  }),
  creditHold: fc.nat(4_000),
  withAnswerTool: fc.boolean(),
  judgeThrows: fc.boolean(),
  steps: fc.array(stepArb, { maxLength: 10 }),
});

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

/** Plays the scenario, then endless text so the script never runs out. */
function buildScript(scenario: Scenario): Iterable<ScriptedStep> {
  return {
    *[Symbol.iterator]() {
      for (const [stepIndex, step] of scenario.steps.entries()) {
        if (step.kind === 'fault') {
          yield scriptedFault(step.fault, { usage: step.usage });
          continue;
        }
        const content: ToolUseBlock[] = step.calls.map((call, callIndex) => {
          const marker = `s${stepIndex}-c${callIndex}`;
          const input =
            call.name === 'submit_answer' ? (call.valid ? { value: call.value } : { value: 'x' }) : call.valid ? { expression: marker } : { expression: 7 };
          return { type: 'tool_use', id: call.sharedId ?? marker, name: call.name, input };
        });
        yield { reply: { stopReason: step.stopReason, content, usage: step.usage }, latencyMs: step.latencyMs };
      }
      for (;;) yield scriptedText('still thinking');
    },
  };
}

describe('BR-CAP-PFM-LLM-002-01/02/03/07 invariants hold over random scripted conversations', () => {
  it('never exceeds the turn or tool budgets, never runs a refused batch, and spends exactly the attempts’ prices', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        const limits: ConversationLimits = scenario.limits;
        const clock = new VirtualClock();
        const scripted = new ScriptedProvider(buildScript(scenario), { clock });
        // Every tool batch the loop actually received (a reply the attempt timeout cut off never arrives).
        const batches: ToolUseBlock[][] = [];
        const provider: Provider = {
          name: scripted.name,
          send: async (request, options) => {
            const response = await scripted.send(request, options);
            batches.push(response.content.filter((block): block is ToolUseBlock => block.type === 'tool_use'));
            return response;
          },
        };
        const ran: string[] = [];
        const record = (input: unknown) => ran.push((input as { expression: string }).expression);
        const calc = countingTool('calc', { behaviour: record });
        const save = countingTool('save', { effect: 'write', behaviour: record });
        const ghost = countingTool('ghost', { withoutHandler: true });
        const reported: AttemptRecord[] = [];
        const answerTool = submitAnswer((input) => {
          if (scenario.judgeThrows) throw new Error('judge down');
          return input.value === 42 ? { accepted: true } : { accepted: false, feedback: 'wrong' };
        });

        const result = await runToolLoop({
          messages: ask(),
          tools: [calc, save, ghost],
          answerTool: scenario.withAnswerTool ? answerTool : undefined,
          limits,
          prices: PRICES,
          creditHold: scenario.creditHold,
          model: 'prop-model',
          provider,
          clock,
          random: () => 0.5,
          onAttempt: (attempt) => {
            reported.push(attempt);
          },
        });

        // BR-01: never more than maxTurns turns, whatever the retries.
        expect(result.turnsUsed).toBeLessThanOrEqual(limits.maxTurns);
        expect(new Set(reported.map((a) => a.turn)).size).toBe(result.turnsUsed);
        expect(reported.filter((a) => a.retry === 0)).toHaveLength(result.turnsUsed);
        expect(scripted.calls.length).toBeLessThanOrEqual(limits.maxTurns * limits.maxAttemptsPerTurn);

        // BR-02 / BR-08: never more answered calls than maxToolCalls.
        expect(result.toolCallsUsed).toBeLessThanOrEqual(limits.maxToolCalls);
        expect(ran.length).toBeLessThanOrEqual(result.toolCallsUsed);
        const lastRequest = scripted.requests.at(-1);
        const answered = (lastRequest?.messages ?? []).flatMap((m) => m.content).filter((b) => b.type === 'tool_result');
        expect(answered.length).toBeLessThanOrEqual(limits.maxToolCalls);

        // Never a handler of a refused batch: not of the batch that ended the conversation…
        const lastBatch = batches.at(-1) ?? [];
        const refusing = ['tool_limit', 'credit_limit', 'protocol_error', 'turn_limit', 'refused_by_model', 'incomplete'];
        if (refusing.includes(result.outcome) && reported.at(-1)?.classification === 'ok') {
          for (const call of lastBatch) expect(ran).not.toContain((call.input as { expression?: unknown }).expression);
        }
        // …nor of any batch that put a write tool beside another call.
        for (const batch of batches) {
          if (batch.length > 1 && batch.some((call) => call.name === 'save')) {
            for (const call of batch) expect(ran).not.toContain((call.input as { expression?: unknown }).expression);
          }
        }

        // BR-03 / BR-07: spent is exactly the sum of every attempt's rounded price.
        const priced = reported.reduce((sum, a) => sum + priceAttempt(a.usage, PRICES), 0);
        expect(reported.map((a) => a.priceCredits)).toEqual(reported.map((a) => priceAttempt(a.usage, PRICES)));
        expect(result.spentCredits).toBe(priced);
        expect(result.priceTotalCredits).toBe(priced);
        expect(result.attemptCount).toBe(reported.length);
        expect(result.usageReported).toBe(reported.some((a) => a.usage !== undefined));

        // Outcomes name their limit; a completion with an answer tool is the accepted answer.
        const limitOf: Record<string, string | undefined> = {
          turn_limit: 'maxTurns',
          tool_limit: 'maxToolCalls',
          credit_limit: 'creditHold',
          time_limit: 'totalTimeMs',
        };
        expect(result.endingLimit).toBe(limitOf[result.outcome]);
        if (result.outcome === 'completed' && scenario.withAnswerTool) expect(result.answer).toEqual({ value: 42 });
        if (result.outcome === 'credit_limit') expect(result.spentCredits).toBeGreaterThan(scenario.creditHold);
      }),
      { numRuns: 300 },
    );
  });
});
