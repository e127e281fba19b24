/**
 * Checks of a JSON body that run without recursion: its nesting depth on the raw bytes (before it
 * is parsed and walked), and keys named like `Object.prototype` members on the parsed value.
 */
import { MAX_JSON_NESTING_LEVELS } from './http.bounds';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** True when the JSON text nests objects and arrays deeper than MAX_JSON_NESTING_LEVELS. */
export function nestsTooDeep(json: Uint8Array): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < json.length; index++) {
    const byte = json[index];
    if (inString) {
      if (byte === BACKSLASH) index++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > MAX_JSON_NESTING_LEVELS) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return false;
}

// `__proto__`, `constructor`, `toString`, `hasOwnProperty`…: a body's key by one of these names is
// refused rather than stripped or, worse, read through the prototype.
export const PROTOTYPE_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * The dotted paths (`input.constructor`, `items.0.__proto__`) of every key named like an
 * Object.prototype member, found with an explicit stack (the depth is already bounded).
 */
export function prototypeNamedKeys(body: unknown): string[] {
  const found: string[] = [];
  const pending: Array<{ readonly value: unknown; readonly path: string }> = [{ value: body, path: '' }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, path } = next;
    if (typeof value !== 'object' || value === null) continue;
    for (const key of Object.keys(value)) {
      const child = path === '' ? key : `${path}.${key}`;
      if (!Array.isArray(value) && PROTOTYPE_NAMES.has(key)) found.push(child);
      pending.push({ value: (value as Record<string, unknown>)[key], path: child });
    }
  }
  return found.sort();
}

const COMMA = 0x2c;
const OBJECT = 0;
const ARRAY = 1;
/** Members an object's names are compared in a list for; past this many, in a Set. */
const LINEAR_NAME_SEARCH_LIMIT = 16;

/** Where a JSON text names a member twice in one object: the member's name and its dotted path. */
export interface DuplicateMember {
  /** The name as parsed (`"max_tok\u0065ns"` is `max_tokens`). */
  readonly name: string;
  /** `max_tokens`, `messages.0.content.1.type`: names, and array indexes, from the top. */
  readonly path: string;
}

/**
 * The first member a JSON text names twice in one object, at any depth, names compared as a parser
 * reads them (escapes resolved); undefined when there is none. JSON.parse keeps the last of two and
 * another parser may keep the first, so a body that names one twice means two things: it is refused,
 * never read one way and forwarded to be read the other (issue 31, finding 3).
 *
 * `json` must be text JSON.parse accepted: the scan only finds where each string begins and ends (a
 * string's body is skipped with indexOf, so long prompts cost little), and which strings are names.
 * `maxDepth` bounds what it keeps per level: deeper → 'too deep'.
 */
export function duplicateMember(json: string, maxDepth: number): DuplicateMember | 'too deep' | undefined {
  const kinds: number[] = [];
  const indexes: number[] = [];
  const names: (string[] | Set<string> | undefined)[] = [];
  const current: string[] = [];
  let depth = 0;
  let expectingName = false;
  for (let at = 0; at < json.length; at++) {
    const code = json.charCodeAt(at);
    if (code === QUOTE) {
      const end = stringEnd(json, at);
      if (expectingName) {
        const name = nameAt(json, at, end);
        const seen = names[depth - 1];
        if (seen === undefined) names[depth - 1] = [name];
        else if (Array.isArray(seen) ? seen.includes(name) : seen.has(name)) return { name, path: pathOf(kinds, indexes, current, depth - 1, name) };
        else if (!Array.isArray(seen)) seen.add(name);
        else if (seen.length < LINEAR_NAME_SEARCH_LIMIT) seen.push(name);
        else names[depth - 1] = new Set([...seen, name]);
        current[depth - 1] = name;
        expectingName = false;
      }
      at = end;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (depth === maxDepth) return 'too deep';
      kinds[depth] = code === OPEN_BRACE ? OBJECT : ARRAY;
      indexes[depth] = 0;
      names[depth] = undefined;
      depth++;
      expectingName = code === OPEN_BRACE;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
      expectingName = false;
    } else if (code === COMMA) {
      if (kinds[depth - 1] === OBJECT) expectingName = true;
      else indexes[depth - 1]!++;
    }
  }
  return undefined;
}

/** The index of the quote that closes the string opening at `start`. */
function stringEnd(json: string, start: number): number {
  let quote = json.indexOf('"', start + 1);
  for (;;) {
    let backslashes = 0;
    while (json.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
    quote = json.indexOf('"', quote + 1);
  }
}

/** A member's name as parsed: as written unless it has an escape. */
function nameAt(json: string, start: number, end: number): string {
  const text = json.slice(start + 1, end);
  return text.includes('\\') ? (JSON.parse(json.slice(start, end + 1)) as string) : text;
}

/** The dotted path to `name` in the object at `level`; a name that is not a plain word is quoted. */
function pathOf(kinds: readonly number[], indexes: readonly number[], current: readonly string[], level: number, name: string): string {
  const segments: string[] = [];
  for (let at = 0; at < level; at++) segments.push(kinds[at] === OBJECT ? segment(current[at]!) : String(indexes[at]));
  segments.push(segment(name));
  return segments.join('.');
}

const segment = (name: string): string => (/^[\w$-]+$/.test(name) ? name : JSON.stringify(name));
