/**
 * Who a gateway call was for, as its caller says (docs/gateway.md "Who spent it"): the Messages body's
 * `metadata.user_id` and the `x-ledger-tags` header. Both are opaque to llm-ledger: kept on the
 * invocation as given, within the bounds below, and never checked against anything. Nothing else of
 * the body rides along: no prompt, answer or tool text.
 */

/**
 * Longest `metadata.user_id` recorded, in characters: Anthropic's own bound for the field, so a body
 * Anthropic accepts is never refused for it. Longer is a 400 naming the field.
 */
export const MAX_CALL_USER_ID_CHARS = 256;
/** Most tags one call may carry in `x-ledger-tags`; more is a 400 naming the header. */
export const MAX_CALL_TAGS = 10;
/** Longest tag, in characters. */
export const MAX_CALL_TAG_CHARS = 64;
/** The header a caller tags a call with: `x-ledger-tags: team-a,nightly`. */
export const CALL_TAGS_HEADER = 'x-ledger-tags';
/** A tag: a letter or digit, then letters, digits and `. _ : / = + @ -` (no comma, no space). */
export const CALL_TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/=+@-]*$/;

/** A call's attribution as recorded on its InvocationEstimated (`gateway.userId`, `gateway.tags`). */
export interface CallAttribution {
  /** `metadata.user_id` as sent: at most MAX_CALL_USER_ID_CHARS characters, never empty. */
  readonly userId?: string;
  /** The `x-ledger-tags` tags, each once, in the order first sent; never empty. */
  readonly tags?: readonly string[];
}

/**
 * The tags of an `x-ledger-tags` header (Node joins a header sent twice with `, `, so both lists
 * count), or what is wrong with it, worded for a 400 that names the header. Absent or blank: no tags.
 */
export function readCallTags(header: string | readonly string[] | undefined): { readonly tags: readonly string[] } | { readonly problem: string } {
  const value = Array.isArray(header) ? header.join(',') : (header as string | undefined) ?? '';
  const tags: string[] = [];
  for (const part of value.split(',')) {
    const tag = part.trim();
    if (tag === '') continue;
    if (tag.length > MAX_CALL_TAG_CHARS) return { problem: `${CALL_TAGS_HEADER}: each tag must be at most ${MAX_CALL_TAG_CHARS} characters` };
    if (!CALL_TAG_PATTERN.test(tag)) return { problem: `${CALL_TAGS_HEADER}: a tag must start with a letter or digit and hold only letters, digits and . _ : / = + @ -` };
    if (!tags.includes(tag)) tags.push(tag);
  }
  if (tags.length > MAX_CALL_TAGS) return { problem: `${CALL_TAGS_HEADER}: at most ${MAX_CALL_TAGS} tags (comma-separated) may be sent` };
  return { tags };
}

/** What is wrong with a recorded tag list (the decider's check of an event's `gateway.tags`), or undefined. */
export function tagListProblem(tags: unknown): string | undefined {
  if (!Array.isArray(tags) || tags.length === 0 || tags.length > MAX_CALL_TAGS) return `must be a list of 1 to ${MAX_CALL_TAGS} tags`;
  const wrong = tags.find((tag) => typeof tag !== 'string' || tag.length > MAX_CALL_TAG_CHARS || !CALL_TAG_PATTERN.test(tag));
  if (wrong !== undefined) return `each must be a tag of at most ${MAX_CALL_TAG_CHARS} characters (letters, digits and . _ : / = + @ -)`;
  return new Set(tags).size === tags.length ? undefined : 'must name each tag once';
}
