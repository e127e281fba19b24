/**
 * One reading of a request (issue 31, finding 3), as a property: Messages bodies are generated with
 * random members at any depth, names in any Unicode and written with or without `\u` escapes, and
 * sometimes one member named twice in one object (the second spelt its own way). Every body that
 * names a member twice is refused; for every other body, the facts the hold is sized by (model,
 * max_tokens, stream, the web-search tools' max_uses) are what JSON.parse reads of the bytes forwarded.
 */
import fc from 'fast-check';
import { MAX_GATEWAY_JSON_NESTING_LEVELS } from '../../src/gateway/anthropic-body.reader';
import { readMessagesBodyFacts } from '../../src/gateway/messages-body.facts';
import { duplicateMember } from '../../src/http-kit/json-body.checks';

type Json = null | boolean | number | string | { readonly items: readonly Json[] } | { readonly members: readonly Member[] };
/** A member as written: its name, which of the name's characters are written as `\u` escapes, its value. */
type Member = readonly [name: string, escapes: readonly boolean[], value: Json];

const NAME_CHARACTERS = ['a', 'b', 'm', '_', '.', ' ', 'é', 'ж', '😀', '"', '\\', '\n', '\u0000', '\u2028', 'x'];
const name = fc.array(fc.constantFrom(...NAME_CHARACTERS), { maxLength: 4 }).map((characters) => characters.join(''));
const escapes = fc.array(fc.boolean(), { minLength: 1, maxLength: 4 });
const scalar = fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ maxLength: 6 }));
const { value } = fc.letrec<{ value: Json; array: Json; object: Json }>((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 3 }).map((items) => ({ items })),
  object: fc.uniqueArray(fc.tuple(name, escapes, tie('value')), { selector: ([member]) => member, maxLength: 4 }).map((members) => ({ members })),
}));

/** A name as JSON text: each character raw or as `\u` escapes (those JSON requires escaped, always). */
function writeName(text: string, escaped: readonly boolean[]): string {
  let out = '"';
  [...text].forEach((character, index) => {
    const code = character.codePointAt(0)!;
    const mustEscape = character === '"' || character === '\\' || code < 0x20;
    if (!mustEscape && !escaped[index % escaped.length]) out += character;
    else for (let unit = 0; unit < character.length; unit++) out += `\\u${character.charCodeAt(unit).toString(16).padStart(4, '0')}`;
  });
  return `${out}"`;
}

function write(json: Json): string {
  if (json === null || typeof json !== 'object') return JSON.stringify(json);
  if ('items' in json) return `[${json.items.map(write).join(',')}]`;
  return `{${json.members.map(([member, escaped, child]) => `${writeName(member, escaped)}: ${write(child)}`).join(',')}}`;
}

/** Every object in the tree, depth first, the top first. */
function objectsOf(json: Json, found: { members: Member[] }[] = []): { members: Member[] }[] {
  if (json === null || typeof json !== 'object') return found;
  if ('members' in json) found.push(json as { members: Member[] });
  for (const child of 'items' in json ? json.items : json.members.map(([, , member]) => member)) objectsOf(child, found);
  return found;
}

const TOP_NAMES = new Set(['model', 'max_tokens', 'stream', 'tools', 'messages']);
const tool = fc.record({ type: fc.constantFrom('web_search_20250305', 'web_search_20260101', 'custom'), max_uses: fc.oneof(fc.integer({ min: -2, max: 60 }), fc.constant('9')) });
const messagesBody = fc.record({
  model: fc.constantFrom('claude-dear', 'claude-cheap', 'clаude-cyrillic-a'),
  maxTokens: fc.oneof(fc.integer({ min: 1, max: 128_000 }), fc.constant(1e20), fc.constant(1.5)),
  stream: fc.boolean(),
  tools: fc.array(tool, { maxLength: 3 }),
  extra: fc.uniqueArray(fc.tuple(name, escapes, value), { selector: ([member]) => member, maxLength: 4 }).map((members) => members.filter(([member]) => !TOP_NAMES.has(member))),
  topEscapes: fc.array(escapes, { minLength: 5, maxLength: 5 }),
  duplicate: fc.option(fc.record({ object: fc.nat(), member: fc.nat(), escaped: escapes, value, last: fc.boolean() }), { freq: 2 }),
});

interface Generated {
  readonly text: string;
  /** The name written twice in one object, when one is. */
  readonly duplicated?: string;
}

type GeneratedBody = typeof messagesBody extends fc.Arbitrary<infer T> ? T : never;

function generate(body: GeneratedBody): Generated {
  const [m, t, s, l, g] = body.topEscapes as [boolean[], boolean[], boolean[], boolean[], boolean[]];
  const tools: Json = { items: body.tools.map((entry) => ({ members: [['type', [false], entry.type], ['max_uses', [false], entry.max_uses]] as Member[] })) };
  const top: { members: Member[] } = {
    members: [['model', m, body.model], ['max_tokens', t, body.maxTokens], ['stream', s, body.stream], ['tools', l, tools], ['messages', g, { items: [] }], ...body.extra],
  };
  let duplicated: string | undefined;
  if (body.duplicate !== null) {
    const objects = objectsOf(top).filter((object) => object.members.length > 0);
    const target = objects[body.duplicate.object % objects.length]!;
    const [member] = target.members[body.duplicate.member % target.members.length]!;
    const second: Member = [member, body.duplicate.escaped, body.duplicate.value];
    if (body.duplicate.last) target.members.push(second);
    else target.members.unshift(second);
    duplicated = member;
  }
  return { text: write(top), duplicated };
}

describe('one reading of a request (issue 31, finding 3)', () => {
  it('finding 3: every body that names a member twice, at any depth and however spelt, is refused; every other is held as JSON.parse reads its bytes', () => {
    fc.assert(
      fc.property(messagesBody, (body) => {
        const { text, duplicated } = generate(body);
        const bytes = Buffer.from(text, 'utf8');
        const read = readMessagesBodyFacts(bytes);
        const found = duplicateMember(bytes.toString('utf8'), MAX_GATEWAY_JSON_NESTING_LEVELS);
        if (duplicated !== undefined) {
          expect(found).toMatchObject({ name: duplicated });
          expect(read.problem?.message).toContain('is named more than once in its object');
          return;
        }
        expect(found).toBeUndefined();
        const parsed = JSON.parse(bytes.toString('utf8')) as { model: string; max_tokens: number; stream: boolean; tools: { type: string; max_uses: unknown }[] };
        if (read.problem !== undefined) {
          // Only a max_tokens that is not a whole number from 1 is refused here.
          expect(read.problem.message).toMatch(/^max_tokens: /);
          expect(Number.isSafeInteger(parsed.max_tokens)).toBe(false);
          return;
        }
        expect(read.facts).toMatchObject({ model: parsed.model, maxTokens: parsed.max_tokens, stream: parsed.stream, bodyBytes: bytes.length });
        const webSearch = parsed.tools.filter((entry) => entry.type.startsWith('web_search_'));
        expect(read.facts.webSearchMaxUses).toEqual(webSearch.map((entry) => (typeof entry.max_uses === 'number' && entry.max_uses > 0 ? entry.max_uses : undefined)));
      }),
      { numRuns: 1_000 },
    );
  });

  it('finding 3: names the duplicate by its path, array indexes included, a name that is not a plain word quoted', () => {
    expect(duplicateMember('{"a":[{"b":1},{"c":{"d":1,"d":2}}]}', 10)).toEqual({ name: 'd', path: 'a.1.c.d' });
    expect(duplicateMember('{"x y":{"\\u00e9":1,"é":2}}', 10)).toEqual({ name: 'é', path: '"x y"."é"' });
    expect(duplicateMember('{"a":"\\"b\\\\","b\\\\":1,"b\\u005c":2}', 10)).toEqual({ name: 'b\\', path: '"b\\\\"' });
    expect(duplicateMember('{"a":{"b":1},"c":{"b":1},"d":[{"b":1},{"b":2}]}', 10)).toBeUndefined();
  });

  it('finding 3: compares many names in one object as few, and bounds the nesting it keeps', () => {
    const many = Array.from({ length: 100 }, (_, index) => `"k${index}":${index}`);
    expect(duplicateMember(`{${many.join(',')}}`, 10)).toBeUndefined();
    expect(duplicateMember(`{${many.join(',')},"k57":0}`, 10)).toEqual({ name: 'k57', path: 'k57' });
    expect(duplicateMember(`${'['.repeat(11)}${']'.repeat(11)}`, 10)).toBe('too deep');
    expect(duplicateMember(`${'['.repeat(10)}${']'.repeat(10)}`, 10)).toBeUndefined();
  });
});
