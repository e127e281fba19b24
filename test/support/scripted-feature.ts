import type { OperationFeature } from '../../src/features/operation-feature';
import { ScriptedProvider, type ScriptedStep, type Usage } from '../../src/runtime';

export function usage(
  inputTokens: number,
  outputTokens = 0,
  cacheWriteTokens = 0,
  cacheReadTokens = 0,
  cacheWrite1hTokens = 0,
  webSearchRequests = 0,
): Usage {
  return { inputTokens, outputTokens, cacheWriteTokens, cacheWrite1hTokens, cacheReadTokens, webSearchRequests };
}

/**
 * A feature for tests: one read tool `lookup` (answers "42"), an answer tool `submit_answer` whose
 * judge accepts exactly 42, and a scripted model that plays `script()` afresh for each invocation.
 */
export function scriptedFeature(operationId: string, script: () => Iterable<ScriptedStep>): OperationFeature & { handlerRuns: number } {
  const feature = {
    operationId,
    handlerRuns: 0,
    prepare(input: unknown) {
      const text = (input as { question?: string } | null)?.question ?? 'question';
      return {
        system: [{ type: 'text' as const, text: 'Answer with submit_answer.', stable: true }],
        messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text }] }],
        tools: [
          {
            name: 'lookup',
            description: 'Looks the answer up.',
            inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
            effect: 'read' as const,
            handler: () => {
              feature.handlerRuns += 1;
              return '42';
            },
          },
        ],
        answerTool: {
          name: 'submit_answer',
          description: 'Submits the answer.',
          inputSchema: { type: 'object', properties: { value: { type: 'number' } }, required: ['value'] },
          judge: (answer: unknown) =>
            (answer as { value: number }).value === 42 ? { accepted: true as const } : { accepted: false as const, feedback: 'wrong' },
        },
      };
    },
    scriptedModel: () => new ScriptedProvider(script()),
  };
  return feature;
}
