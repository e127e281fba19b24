/**
 * Error text that reaches the model (docs/rules.md step 11): bounded, and never a stack trace or an internal
 * error structure, whatever a handler or validator threw.
 */

/** The longest error text a tool result may carry, in characters. */
export const MAX_TOOL_ERROR_TEXT_CHARS = 1000;

const STACK_FRAME_LINE = /^\s*at\s/;
const ELLIPSIS = '…';

/** Drops stack-frame lines, trims, and cuts the text to MAX_TOOL_ERROR_TEXT_CHARS (ending with …). */
export function boundToolErrorText(text: string): string {
  let bounded = text;
  if (bounded.includes('\n')) {
    bounded = bounded
      .split('\n')
      .filter((line) => !STACK_FRAME_LINE.test(line))
      .join('\n');
  }
  bounded = bounded.trim();
  if (bounded.length <= MAX_TOOL_ERROR_TEXT_CHARS) return bounded;
  let cut = MAX_TOOL_ERROR_TEXT_CHARS - ELLIPSIS.length;
  // Do not split a surrogate pair: half a character is not text.
  const last = bounded.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return bounded.slice(0, cut) + ELLIPSIS;
}

/**
 * The disclosable text of something thrown: an Error's message or a thrown string, bounded. Anything
 * else (objects, error structures, an empty message) yields `fallback`, so internals never leak.
 */
export function describeThrown(thrown: unknown, fallback: string): string {
  let message = '';
  try {
    if (thrown instanceof Error && typeof thrown.message === 'string') message = thrown.message;
    else if (typeof thrown === 'string') message = thrown;
  } catch {
    // A message getter that throws discloses nothing.
  }
  const bounded = boundToolErrorText(message);
  return bounded.length > 0 ? bounded : boundToolErrorText(fallback);
}
