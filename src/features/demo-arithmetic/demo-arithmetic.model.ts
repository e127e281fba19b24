import {
  ScriptedProvider,
  scriptedToolUse,
  type ContentBlock,
  type Message,
  type ProviderRequest,
  type ScriptedOutcome,
  type Usage,
} from '../../runtime';
import { extractExpression } from './arithmetic-expression';

/** Characters per token the offline model pretends to read and write (a rough English average). */
const CHARS_PER_TOKEN = 4;

/**
 * The offline model of `demo.arithmetic`: it asks `calculate` for the question's expression, then
 * submits the value it got back; after a rejection it calculates again. It reports usage from the
 * text it saw and wrote, so its attempts have real prices.
 */
export function demoArithmeticModel(): ScriptedProvider {
  function* forever() {
    for (;;) yield (request: ProviderRequest): ScriptedOutcome => answer(request);
  }
  return new ScriptedProvider(forever(), { name: 'scripted', recordRequests: false });
}

function answer(request: ProviderRequest): ScriptedOutcome {
  const turn = request.messages.filter((message) => message.role === 'assistant').length + 1;
  const last = request.messages[request.messages.length - 1];
  const calculated = last === undefined ? undefined : calculatedValue(request.messages, last);
  const call =
    calculated === undefined
      ? { id: `toolu_demo_${turn}`, name: 'calculate', input: { expression: questionExpression(request.messages) } }
      : { id: `toolu_demo_${turn}`, name: 'submit_answer', input: { value: calculated } };
  const inputChars = request.system.reduce((n, block) => n + block.text.length, 0) + request.messages.reduce((n, m) => n + textLength(m.content), 0);
  const usage: Usage = {
    inputTokens: Math.ceil(inputChars / CHARS_PER_TOKEN),
    outputTokens: Math.ceil(JSON.stringify(call.input).length / CHARS_PER_TOKEN) + 8,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    cacheReadTokens: 0,
    webSearchRequests: 0,
  };
  return scriptedToolUse([call], { usage });
}

/** The value `calculate` returned in the last message, when that is what the model is reading. */
function calculatedValue(messages: readonly Message[], last: Message): number | undefined {
  const previous = messages[messages.length - 2];
  for (const block of last.content) {
    if (block.type !== 'tool_result' || block.isError) continue;
    const call = previous?.content.find((b) => b.type === 'tool_use' && b.id === block.toolUseId);
    if (call?.type === 'tool_use' && call.name === 'calculate') {
      const value = Number(block.content);
      if (Number.isFinite(value)) return value;
    }
  }
  return undefined;
}

function questionExpression(messages: readonly Message[]): string {
  const first = messages[0]?.content.find((block) => block.type === 'text');
  return (first?.type === 'text' ? extractExpression(first.text) : undefined) ?? '0';
}

function textLength(content: readonly ContentBlock[]): number {
  let chars = 0;
  for (const block of content) {
    if (block.type === 'text') chars += block.text.length;
    else if (block.type === 'tool_result') chars += block.content.length;
    else if (block.type === 'tool_use') chars += JSON.stringify(block.input).length;
  }
  return chars;
}
