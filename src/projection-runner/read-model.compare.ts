import type { ProjectionCheckpoint, SqliteReadModelStore, StoredDocument } from './read-model.store';

/** Default (and largest) number of differing documents reported per projection; the count stays exact. */
export const MAX_REPORTED_DIFFERENCES = 1_000;
const DEFAULT_REPORTED_DIFFERENCES = 100;

export interface CompareReadModelsOptions {
  /** The store under audit, e.g. the live read model. */
  readonly actual: SqliteReadModelStore;
  /** The reference, e.g. a rebuild from position 0 into a scratch store. Must be another store. */
  readonly expected: SqliteReadModelStore;
  /** Projections to compare; default every projection found in either store. */
  readonly projections?: readonly string[];
  /** Differing documents reported per projection (1…MAX_REPORTED_DIFFERENCES); default 100. */
  readonly maxDifferencesPerProjection?: number;
}

/** A document that is missing on one side or differs between the two. */
export interface DocumentDifference {
  readonly collection: string;
  readonly id: string;
  /** JSON text in the audited store; undefined when the document is missing there. */
  readonly actual: string | undefined;
  /** JSON text in the reference store; undefined when the document is missing there. */
  readonly expected: string | undefined;
  readonly actualIndexKey: string | undefined;
  readonly expectedIndexKey: string | undefined;
}

export interface ProjectionComparison {
  readonly projection: string;
  /** Same checkpoint (version and position) and same documents. */
  readonly equal: boolean;
  readonly actualCheckpoint: ProjectionCheckpoint | undefined;
  readonly expectedCheckpoint: ProjectionCheckpoint | undefined;
  readonly checkpointsEqual: boolean;
  /** Every differing document, counted. */
  readonly differenceCount: number;
  /** The first differing documents in (collection, id) order, at most the configured bound. */
  readonly differences: readonly DocumentDifference[];
}

export interface ReadModelComparison {
  readonly equal: boolean;
  readonly projections: readonly ProjectionComparison[];
}

/**
 * Compares two read-model stores projection by projection: checkpoints, then every document (its
 * JSON value, key order aside, and its index key). Each store is read from one snapshot, streaming in
 * primary-key order, so memory stays bounded whatever the size; the call is synchronous and meant for
 * tools (`audit verify`), not for a request path.
 */
export function compareReadModels(options: CompareReadModelsOptions): ReadModelComparison {
  const { actual, expected } = options;
  if (actual === expected) throw new Error('compareReadModels needs two different stores');
  const limit = options.maxDifferencesPerProjection ?? DEFAULT_REPORTED_DIFFERENCES;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_REPORTED_DIFFERENCES) {
    throw new RangeError(`maxDifferencesPerProjection must be 1 to ${MAX_REPORTED_DIFFERENCES}, got ${limit}`);
  }
  return actual.readSnapshot(() =>
    expected.readSnapshot(() => {
      const names =
        options.projections ?? [...new Set([...actual.projectionNames(), ...expected.projectionNames()])].sort();
      const projections = names.map((name) => compareProjection(name, actual, expected, limit));
      return { equal: projections.every((projection) => projection.equal), projections };
    }),
  );
}

function compareProjection(
  projection: string,
  actualStore: SqliteReadModelStore,
  expectedStore: SqliteReadModelStore,
  limit: number,
): ProjectionComparison {
  const actualCheckpoint = actualStore.checkpoint(projection);
  const expectedCheckpoint = expectedStore.checkpoint(projection);
  const checkpointsEqual =
    actualCheckpoint?.version === expectedCheckpoint?.version &&
    actualCheckpoint?.position === expectedCheckpoint?.position;
  const differences: DocumentDifference[] = [];
  let differenceCount = 0;
  const record = (actual: StoredDocument | undefined, expected: StoredDocument | undefined): void => {
    differenceCount += 1;
    if (differences.length >= limit) return;
    const key = (actual ?? expected)!;
    differences.push({
      collection: key.collection,
      id: key.id,
      actual: actual?.body,
      expected: expected?.body,
      actualIndexKey: actual?.indexKey,
      expectedIndexKey: expected?.indexKey,
    });
  };

  const actualRows = actualStore.documents(projection);
  const expectedRows = expectedStore.documents(projection);
  try {
    let left = actualRows.next();
    let right = expectedRows.next();
    // A merge join over both primary-key orders: each side is read once, nothing is held in memory.
    while (!left.done || !right.done) {
      const order = left.done ? 1 : right.done ? -1 : compareKeys(left.value, right.value);
      if (order < 0) {
        record(left.value as StoredDocument, undefined);
        left = actualRows.next();
      } else if (order > 0) {
        record(undefined, right.value as StoredDocument);
        right = expectedRows.next();
      } else {
        const a = left.value as StoredDocument;
        const b = right.value as StoredDocument;
        if (a.indexKey !== b.indexKey || !sameJson(a.body, b.body)) record(a, b);
        left = actualRows.next();
        right = expectedRows.next();
      }
    }
  } finally {
    actualRows.return();
    expectedRows.return();
  }
  return {
    projection,
    equal: checkpointsEqual && differenceCount === 0,
    actualCheckpoint,
    expectedCheckpoint,
    checkpointsEqual,
    differenceCount,
    differences,
  };
}

function compareKeys(a: StoredDocument, b: StoredDocument): number {
  return compareText(a.collection, b.collection) || compareText(a.id, b.id);
}

/**
 * Orders strings as SQLite's BINARY collation does (UTF-8 bytes, i.e. code points), which differs
 * from JavaScript's UTF-16 order when a surrogate meets a character from U+E000 to U+FFFF.
 */
export function compareText(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index += 1) {
    const x = a.charCodeAt(index);
    const y = b.charCodeAt(index);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** Moves surrogates (which encode code points above U+FFFF) after every other UTF-16 unit. */
function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}

/** Same JSON value: equal text, or equal once parsed with object key order ignored. */
function sameJson(a: string, b: string): boolean {
  if (a === b) return true;
  let left: unknown;
  let right: unknown;
  try {
    left = JSON.parse(a);
    right = JSON.parse(b);
  } catch {
    return false;
  }
  return sameValue(left, right);
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, index) => sameValue(item, other[index]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every((key) => Object.prototype.hasOwnProperty.call(right, key) && sameValue(left[key], right[key]));
}
