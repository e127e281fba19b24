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
