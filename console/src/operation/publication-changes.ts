import type { PublicationWindow } from '../api/types';

/** The parts of a publication whose changes the operation page lists. */
const COMPARED = ['routing', 'limits', 'prices', 'creditHold', 'enabled'] as const;

export interface Change {
  /** Dotted path, e.g. `limits.maxTurns`. */
  readonly field: string;
  readonly before: unknown;
  readonly after: unknown;
}

/** `{ limits: { maxTurns: 6 } }` → `[['limits.maxTurns', 6]]`; arrays and scalars are leaves. */
function leaves(value: unknown, path: string, into: Map<string, unknown>): Map<string, unknown> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [name, inner] of Object.entries(value)) leaves(inner, path === '' ? name : `${path}.${name}`, into);
  } else {
    into.set(path, value);
  }
  return into;
}

function flatten(version: PublicationWindow): Map<string, unknown> {
  const into = new Map<string, unknown>();
  for (const part of COMPARED) leaves(version[part], part, into);
  return into;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Every field whose value differs between two versions, a field added or removed included. */
export function changesBetween(before: PublicationWindow, after: PublicationWindow): Change[] {
  const old = flatten(before);
  const now = flatten(after);
  const fields = [...new Set([...old.keys(), ...now.keys()])];
  return fields.filter((field) => !same(old.get(field), now.get(field))).map((field) => ({ field, before: old.get(field), after: now.get(field) }));
}

/** Every field of a version, for the first one (nothing to compare it with). */
export function fieldsOf(version: PublicationWindow): ReadonlyArray<readonly [string, unknown]> {
  return [...flatten(version).entries()];
}
