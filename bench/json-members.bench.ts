/**
 * One reading of a gateway request (issue 31, finding 3): what refusing a body that names a member
 * twice costs on the gateway's hot path. Realistic Messages bodies of about 100 KB and 5 MB (a
 * system prompt, tool definitions with their schemas, turns of text, tool calls and tool results)
 * are read four ways, each the median of its runs, in ms per body:
 * - `JSON.parse` alone (what the gateway did before);
 * - the scan of src/http-kit/json-body.checks.ts (duplicateMember) alone, and after JSON.parse;
 * - jsonc-parser's `visit` (a JSON scanner with a visitor, strict: no comments, no trailing commas)
 *   with a set of names per object, and then JSON.parse for the values, as a library-based reading.
 *
 * Run alone: `npx tsc -p tsconfig.build.json && node dist/bench/json-members.bench.js`
 * (BENCH_JSON_RUNS, default 30).
 */
import { performance } from 'node:perf_hooks';
import { duplicateMember } from '../src/http-kit/json-body.checks';

const RUNS = Number(process.env.BENCH_JSON_RUNS ?? 30);
/** Nesting the scan keeps per level: the gateway's own bound. */
const MAX_DEPTH = 1_000;
const SIZES = { '100 KB': 100_000, '5 MB': 5_000_000 };

/** A paragraph of prose with a little markup and non-ASCII, as a prompt or an answer has. */
function prose(seed: number, chars: number): string {
  const words = ['the', 'gateway', 'holds', 'each', 'call', 'at', 'its', 'worst', 'case', '“quoted”', 'naïve', '`code`', 'line\nbreak', 'über', '{"json": 1}', '\\path', 'tab\there'];
  let text = '';
  for (let index = seed; text.length < chars; index++) text += `${words[(index * 7) % words.length]} `;
  return text;
}

function tool(index: number): Record<string, unknown> {
  return {
    name: `tool_${index}`,
    description: prose(index, 400),
    input_schema: {
      type: 'object',
      properties: { path: { type: 'string', description: 'A file path.' }, line: { type: 'integer' }, options: { type: 'object', properties: { recursive: { type: 'boolean' } } } },
      required: ['path'],
    },
  };
}

function turn(index: number): Record<string, unknown>[] {
  const id = `toolu_${index.toString(36).padStart(8, '0')}`;
  return [
    { role: 'user', content: [{ type: 'text', text: prose(index, 1_500) }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: prose(index + 1, 600) },
        { type: 'tool_use', id, name: `tool_${index % 12}`, input: { path: `/src/file_${index}.ts`, line: index, options: { recursive: index % 2 === 0 } } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: [{ type: 'text', text: prose(index + 2, 2_500) }] }] },
  ];
}

/** A Messages body of about `bytes` bytes. */
export function messagesBody(bytes: number): string {
  const tools = Array.from({ length: 12 }, (_, index) => tool(index));
  const messages: Record<string, unknown>[] = [];
  const body = { model: 'claude-sonnet-5-5', max_tokens: 8_192, stream: true, system: prose(0, 4_000), tools, messages };
  for (let index = 0; JSON.stringify(body).length < bytes; index++) messages.push(...turn(index));
  messages.push({ role: 'user', content: 'Go on.' });
  return JSON.stringify(body);
}

/** jsonc-parser's visitor in strict mode, one set of names per open object. */
function visitDuplicates(visit: typeof import('jsonc-parser').visit, json: string): boolean {
  const sets: Set<string>[] = [];
  let duplicate = false;
  let failed = false;
  visit(
    json,
    {
      onObjectBegin: () => void sets.push(new Set()),
      onObjectEnd: () => void sets.pop(),
      onObjectProperty: (name) => {
        const names = sets[sets.length - 1]!;
        if (names.has(name)) duplicate = true;
        names.add(name);
      },
      onError: () => void (failed = true),
    },
    { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false },
  );
  return duplicate || failed;
}

function median(run: () => unknown): number {
  const times: number[] = [];
  for (let index = 0; index < RUNS; index++) {
    const started = performance.now();
    run();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)]! * 1_000) / 1_000;
}

export async function run(): Promise<Record<string, Record<string, number>>> {
  const { visit } = await import('jsonc-parser');
  const result: Record<string, Record<string, number>> = {};
  for (const [label, size] of Object.entries(SIZES)) {
    const json = messagesBody(size);
    if (duplicateMember(json, MAX_DEPTH) !== undefined || visitDuplicates(visit, json)) throw new Error('the bench body must have no duplicate');
    const figures = {
      bytes: Buffer.byteLength(json),
      jsonParseMs: median(() => JSON.parse(json)),
      scanMs: median(() => duplicateMember(json, MAX_DEPTH)),
      jsonParseAndScanMs: median(() => duplicateMember(json, MAX_DEPTH) ?? JSON.parse(json)),
      jsoncVisitMs: median(() => visitDuplicates(visit, json)),
      jsoncVisitAndJsonParseMs: median(() => visitDuplicates(visit, json) || JSON.parse(json)),
    };
    result[label] = figures;
    console.log(`${label}: ${JSON.stringify(figures)}`);
  }
  return result;
}

if (require.main === module) void run();
