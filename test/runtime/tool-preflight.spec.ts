import { CompiledSchemaCache } from '../../src/runtime/compiled-schema.cache';
import {
  MAX_COMPILED_SCHEMAS,
  MAX_TOOL_ERROR_TEXT_CHARS,
  RECOVERABLE_FAULT_KINDS,
  boundToolErrorText,
  buildToolCatalog,
  compileInputSchema,
  describeThrown,
  preflightToolCalls,
  type ToolCatalog,
  type ToolUseBlock,
} from '../../src/runtime';
import { countingTool, submitAnswer } from './fixtures';

const call = (id: string, name: string, input: unknown = { expression: '1+1' }): ToolUseBlock => ({ type: 'tool_use', id, name, input });
const none = new Set<string>();

const calc = countingTool('calc');
const save = countingTool('save', { effect: 'write' });
const ghost = countingTool('ghost', { withoutHandler: true });
const catalog = buildToolCatalog([calc, save, ghost], submitAnswer());

describe('seed 003 per-call preflight classifies the batch as requested, in one side-effect-free pass', () => {
  it('gives each call a status in request order: run, repairable or answer', () => {
    const result = preflightToolCalls(
      [call('a', 'calc'), call('b', 'nope'), call('c', 'calc', { expression: 7 }), call('d', 'submit_answer', { value: 1 }), call('e', 'ghost')],
      catalog,
      none,
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.calls.map((status) => (status.kind === 'repairable' ? status.fault : status.kind))).toEqual([
      'run',
      'unavailable_tool',
      'malformed_arguments',
      'answer',
      'unavailable_tool',
    ]);
    expect(calc.runs).toHaveLength(0);
  });

  it('refuses a batch that repeats a call id, because two results for one id cannot be told apart', () => {
    expect(preflightToolCalls([call('a', 'calc'), call('a', 'calc')], catalog, none)).toEqual({ ok: false, violation: 'duplicate_call_id', callId: 'a' });
  });

  it('refuses a call id reused from an earlier turn, because the model would read an old result as new', () => {
    expect(preflightToolCalls([call('old', 'calc')], catalog, new Set(['old']))).toEqual({ ok: false, violation: 'reused_call_id', callId: 'old' });
  });

  it('refuses an empty call id, which no result could answer', () => {
    expect(preflightToolCalls([call('', 'calc')], catalog, none)).toEqual({ ok: false, violation: 'invalid_call_id' });
  });

  it.each([
    ['write + valid read', [call('w', 'save'), call('r', 'calc')]],
    ['valid read + write', [call('r', 'calc'), call('w', 'save')]],
    ['write + malformed', [call('w', 'save'), call('m', 'calc', {})]],
    ['malformed + write', [call('m', 'calc', {}), call('w', 'save')]],
    ['write + unavailable', [call('w', 'save'), call('u', 'nope')]],
    ['unavailable + write', [call('u', 'nope'), call('w', 'save')]],
    ['malformed write + read', [call('w', 'save', { bad: true }), call('r', 'calc')]],
  ])('refuses a write tool beside another call (%s), so recovery never launders an unsafe batch', (_label, batch) => {
    const result = preflightToolCalls(batch, catalog, none);
    expect(result).toMatchObject({ ok: false, violation: 'write_in_multi_call_batch', callId: 'w' });
  });

  it('lets a write tool run alone', () => {
    expect(preflightToolCalls([call('w', 'save')], catalog, none)).toMatchObject({ ok: true, calls: [{ kind: 'run' }] });
  });

  it('has a positive whitelist of exactly two recoverable kinds', () => {
    expect([...RECOVERABLE_FAULT_KINDS]).toEqual(['unavailable_tool', 'malformed_arguments']);
  });

  it('makes any unforeseen per-call fault batch-fatal rather than silently repairable', () => {
    const exploding = Object.assign(
      () => {
        throw new Error('validator crashed');
      },
      { errors: null },
    );
    const broken: ToolCatalog = {
      entries: new Map([['calc', { name: 'calc', role: 'tool', effect: 'read', validate: exploding, tool: calc }]]),
    };
    expect(preflightToolCalls([call('a', 'calc')], broken, none)).toEqual({ ok: false, violation: 'unclassified_fault', callId: 'a' });
  });

  it('tells the model where its arguments went wrong, in bounded text without internals', () => {
    const result = preflightToolCalls([call('a', 'calc', { expression: 7 }), call('b', 'calc', {})], catalog, none);
    if (!result.ok) throw new Error('expected ok');
    const texts = result.calls.map((status) => (status.kind === 'repairable' ? status.text : ''));
    expect(texts[0]).toBe('Arguments for tool "calc" do not match its input schema: /expression must be string. Fix them and call again.');
    expect(texts[1]).toContain("must have required property 'expression'");
    for (const text of texts) {
      expect(text).not.toMatch(/schemaPath|instancePath|\{"/);
      expect(text.length).toBeLessThanOrEqual(MAX_TOOL_ERROR_TEXT_CHARS);
    }
  });

  it('bounds the text for an unknown tool whose name is absurdly long', () => {
    const result = preflightToolCalls([call('a', 'x'.repeat(5_000))], catalog, none);
    if (!result.ok || result.calls[0]!.kind !== 'repairable') throw new Error('expected a repairable call');
    expect(result.calls[0]!.text.length).toBe(MAX_TOOL_ERROR_TEXT_CHARS);
  });
});

describe('the compiled-schema cache is bounded', () => {
  const counting = (maxSchemas: number) => {
    const compiles: string[] = [];
    const cache = new CompiledSchemaCache((schema) => (compiles.push(String(schema['title'])), { title: schema['title'] }), maxSchemas);
    return { cache, compiles, get: (title: string) => cache.get({ title }) };
  };

  it('keeps at most its bound, evicting the least recently used schema first', () => {
    const { cache, compiles, get } = counting(2);
    get('a');
    get('b');
    get('a'); // a is now the most recent
    get('c'); // evicts b
    expect(cache.size).toBe(2);
    get('a');
    get('b');
    expect(compiles).toEqual(['a', 'b', 'c', 'b']);
    expect(MAX_COMPILED_SCHEMAS).toBeGreaterThan(0);
  });

  it('compiles a schema that is not plain JSON without caching it by content', () => {
    const { cache, compiles } = counting(2);
    const cyclic = (): Record<string, unknown> => {
      const schema: Record<string, unknown> = { title: 'cycle' };
      schema['self'] = schema;
      return schema;
    };
    cache.get(cyclic());
    cache.get(cyclic());
    expect(compiles).toEqual(['cycle', 'cycle']);
    expect(cache.size).toBe(0);
  });
});

describe('tool schemas are compiled once and cached', () => {
  it('returns the same validator for the same schema object', () => {
    const schema = { type: 'object' };
    expect(compileInputSchema(schema)).toBe(compileInputSchema(schema));
  });

  it('returns the same validator for an equal schema in a fresh object, so a feature that rebuilds its tools per request compiles nothing', () => {
    const first = compileInputSchema({ type: 'object', properties: { q: { type: 'string', maxLength: 9 } }, required: ['q'] });
    const rebuilt = compileInputSchema({ required: ['q'], properties: { q: { maxLength: 9, type: 'string' } }, type: 'object' });
    expect(rebuilt).toBe(first);
  });

  it('keeps schemas that differ apart', () => {
    const strings = compileInputSchema({ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] });
    const numbers = compileInputSchema({ type: 'object', properties: { q: { type: 'number' } }, required: ['q'] });
    expect(numbers).not.toBe(strings);
    expect([strings({ q: 'a' }), strings({ q: 1 }), numbers({ q: 1 }), numbers({ q: 'a' })]).toEqual([true, false, true, false]);
  });

  it('accepts two operations that reuse a schema $id', () => {
    expect(() => {
      compileInputSchema({ $id: 'https://schemas.example.test/shared.json', type: 'object' });
      compileInputSchema({ $id: 'https://schemas.example.test/shared.json', type: 'object' });
    }).not.toThrow();
  });

  it('rejects a catalog with a duplicate name or a schema that does not compile', () => {
    expect(() => buildToolCatalog([calc, calc])).toThrow(TypeError);
    expect(() => buildToolCatalog([calc], { ...submitAnswer(), name: 'calc' })).toThrow(TypeError);
    expect(() => buildToolCatalog([{ ...calc, inputSchema: { type: 'no-such-type' } }])).toThrow();
  });
});

describe('docs/rules.md step 11 error text reaching the model is bounded and free of stack traces', () => {
  it('keeps the message and drops the stack', () => {
    const error = new Error('division by zero');
    const text = describeThrown(error, 'fallback');
    expect(text).toBe('division by zero');
    expect(text).not.toContain('    at ');
  });

  it('drops stack frames that were pasted into a message', () => {
    expect(boundToolErrorText('bad input\n    at parse (/srv/app/parse.js:10:3)\n    at run (/srv/app/run.js:2:1)')).toBe('bad input');
  });

  it('never serialises a thrown structure, which could carry internals', () => {
    expect(describeThrown({ sql: 'SELECT secret FROM keys', code: 'E42' }, 'Tool failed.')).toBe('Tool failed.');
  });

  it(`cuts long text to ${MAX_TOOL_ERROR_TEXT_CHARS} characters`, () => {
    const text = boundToolErrorText('y'.repeat(10_000));
    expect(text).toHaveLength(MAX_TOOL_ERROR_TEXT_CHARS);
    expect(text.endsWith('…')).toBe(true);
  });
});
