/**
 * Compiled tool-input validators, cached by what a schema says rather than by which object holds it:
 * a feature's `prepare` builds fresh tool objects for every conversation, and compiling a JSON Schema
 * costs far more than the conversation's own accounting (it was 40 % of the service's CPU under HTTP
 * load before this cache). Bounded, least recently used first out, so a feature that generates a
 * schema per request cannot grow the process without limit.
 */

/** Distinct schemas whose compiled validators are kept, in schemas (least recently used evicted first). */
export const MAX_COMPILED_SCHEMAS = 1_000;

/**
 * The schema as canonical JSON: object keys sorted at every level, so two schemas that differ only in
 * key order share one validator. Undefined when the value is not plain JSON (a cycle, a function):
 * such a schema is compiled without the content cache.
 */
export function canonicalSchemaKey(schema: unknown): string | undefined {
  try {
    return JSON.stringify(schema, (_key, value: unknown) => {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
      const sorted: Record<string, unknown> = {};
      for (const key of Object.keys(value).sort()) sorted[key] = (value as Record<string, unknown>)[key];
      return sorted;
    });
  } catch {
    return undefined;
  }
}

export class CompiledSchemaCache<V> {
  // Map iteration order is insertion order: re-inserting on a hit keeps the least recent first.
  private readonly byContent = new Map<string, V>();
  // Identity first: a feature that keeps its schema objects pays neither serialising nor a lookup.
  private readonly byObject = new WeakMap<object, V>();

  constructor(
    private readonly compile: (schema: Record<string, unknown>) => V,
    readonly maxSchemas: number = MAX_COMPILED_SCHEMAS,
  ) {
    if (!Number.isInteger(maxSchemas) || maxSchemas < 1) throw new RangeError(`maxSchemas must be a positive integer, got ${maxSchemas}`);
  }

  /** How many distinct schemas are cached by content. */
  get size(): number {
    return this.byContent.size;
  }

  get(schema: Record<string, unknown>): V {
    const known = this.byObject.get(schema);
    if (known !== undefined) return known;
    const key = canonicalSchemaKey(schema);
    let validator = key === undefined ? undefined : this.byContent.get(key);
    if (validator === undefined) {
      validator = this.compile(schema);
    } else {
      this.byContent.delete(key!);
    }
    if (key !== undefined) {
      this.byContent.set(key, validator);
      if (this.byContent.size > this.maxSchemas) this.byContent.delete(this.byContent.keys().next().value!);
    }
    this.byObject.set(schema, validator);
    return validator;
  }
}
