/**
 * Tiny pure helpers for checking command input field by field. Deciders receive commands that may come
 * straight from JSON, so they check types at run time as well and name every bad field.
 */
import { FieldIssue, ValidationError } from './domain.errors';

/** Longest identifier (operation, organization, invocation id, idempotency key), in characters. */
export const MAX_ID_CHARS = 128;
/** Longest idempotency key, in characters (Stripe's and the IETF Idempotency-Key draft's bound). */
export const MAX_IDEMPOTENCY_KEY_CHARS = 255;
/** Longest free-text reason on a grant or adjustment, in characters. */
export const MAX_REASON_CHARS = 500;

/**
 * Ids end up in stream names (`<category>-<id>`), so they stay printable and free of whitespace. The
 * one definition: the HTTP layer's checks and the OpenAPI document's `pattern` both use it.
 */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
/** ID_PATTERN as the OpenAPI document states it. */
export const ID_PATTERN_TEXT = ID_PATTERN.source;
// Printable ASCII (0x20–0x7E): `order#123` and `user@example.com/req 1` are keys. Never in a stream
// name: a keyed invocation's id is a hash of (organization, key).
const IDEMPOTENCY_KEY = /^[\x20-\x7E]+$/;
/** The same rule as the OpenAPI document states it. */
export const IDEMPOTENCY_KEY_PATTERN_TEXT = `^[\\x20-\\x7E]{1,${MAX_IDEMPOTENCY_KEY_CHARS}}$`;
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;

export interface IntegerBounds {
  readonly min: number;
  readonly max: number;
  /** Unit for the message, e.g. `turns`, `credits`, `ms`. */
  readonly unit: string;
}

/**
 * What is wrong with an idempotency key (docs/http.md "Idempotency keys"): printable ASCII, 1 to
 * MAX_IDEMPOTENCY_KEY_CHARS characters, and not only spaces (a blank key is almost always a client's
 * bug, not a key).
 */
export function idempotencyKeyProblem(value: unknown): string | undefined {
  if (value === undefined || value === null) return value === undefined ? 'is required' : 'must not be null';
  if (typeof value !== 'string' || value.trim() === '') return 'must be a non-empty string';
  if (value.length > MAX_IDEMPOTENCY_KEY_CHARS) return `must be at most ${MAX_IDEMPOTENCY_KEY_CHARS} characters`;
  if (!IDEMPOTENCY_KEY.test(value)) return 'must hold only printable ASCII characters (space to ~)';
  return undefined;
}

/** Milliseconds since the epoch of an ISO-8601 instant, NaN when it is not one. */
export function isoToMs(value: string): number {
  return ISO_INSTANT.test(value) ? Date.parse(value) : Number.NaN;
}

/**
 * Collects issues while reading fields. Each reader returns the value typed as asked for, so call
 * `throwIfAny()` before trusting what they returned.
 */
export class FieldChecks {
  private readonly issues: FieldIssue[] = [];

  add(field: string, message: string): void {
    this.issues.push({ field, message });
  }

  get ok(): boolean {
    return this.issues.length === 0;
  }

  /**
   * Throws one ValidationError carrying every issue found so far. An issue inside a field that is
   * itself wrong (`routing.model` when `routing` is missing) is left out: it says nothing new.
   */
  throwIfAny(): void {
    if (this.issues.length === 0) return;
    const wrong = new Set(this.issues.map((issue) => issue.field));
    const inWrongParent = (field: string): boolean =>
      field.split('.').some((_, i, parts) => i > 0 && wrong.has(parts.slice(0, i).join('.')));
    throw new ValidationError(this.issues.filter((issue) => !inWrongParent(issue.field)));
  }

  present(field: string, value: unknown): boolean {
    if (value === undefined || value === null) {
      this.add(field, 'is required');
      return false;
    }
    return true;
  }

  /** A JSON object; an empty one when it is not (its fields then read as missing). */
  object(field: string, value: unknown): Record<string, unknown> {
    if (!this.present(field, value)) return {};
    if (typeof value !== 'object' || Array.isArray(value)) {
      this.add(field, 'must be an object');
      return {};
    }
    return value as Record<string, unknown>;
  }

  /** A safe integer within bounds; money and counts are never fractional. */
  integer(field: string, value: unknown, { min, max, unit }: IntegerBounds): number {
    if (!this.present(field, value)) return 0;
    // An integer past the bound (1e30) is told the bound; every bound lies within the safe range.
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      this.add(field, `must be a whole number of ${unit}`);
    } else if (value < min) {
      this.add(field, min === 0 ? 'must not be negative' : `must be at least ${min} ${unit}`);
    } else if (value > max) {
      this.add(field, `must be at most ${max} ${unit}`);
    }
    return value as number;
  }

  boolean(field: string, value: unknown): boolean {
    if (this.present(field, value) && typeof value !== 'boolean') this.add(field, 'must be true or false');
    return value as boolean;
  }

  /** A non-blank string of at most `maxChars` characters. */
  text(field: string, value: unknown, maxChars: number): string {
    if (!this.present(field, value)) return '';
    if (typeof value !== 'string' || value.trim() === '') this.add(field, 'must be a non-empty string');
    else if (value.length > maxChars) this.add(field, `must be at most ${maxChars} characters`);
    return value as string;
  }

  id(field: string, value: unknown): string {
    const text = this.text(field, value, MAX_ID_CHARS);
    if (typeof text === 'string' && text.trim() !== '' && text.length <= MAX_ID_CHARS && !ID_PATTERN.test(text)) {
      this.add(field, 'must start with a letter or digit and hold only letters, digits and . _ : -');
    }
    return text;
  }

  idempotencyKey(field: string, value: unknown): string {
    const problem = idempotencyKeyProblem(value);
    if (problem !== undefined) this.add(field, problem);
    return value as string;
  }

  oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
    if (this.present(field, value) && !allowed.includes(value as T)) {
      this.add(field, `must be one of ${allowed.join(', ')}`);
    }
    return value as T;
  }

  /** An ISO-8601 instant with a time zone, e.g. `2025-01-31T12:00:00.000Z`. */
  instant(field: string, value: unknown): string {
    if (!this.present(field, value)) return '';
    if (typeof value !== 'string' || !Number.isFinite(isoToMs(value))) {
      this.add(field, 'must be an ISO-8601 instant with a time zone');
    }
    return value as string;
  }
}
