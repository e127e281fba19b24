/**
 * Deepest nesting of objects and arrays accepted in a JSON body, in levels. Checked on the raw text
 * before anything walks the parsed value recursively, so no body can exhaust the stack.
 */
export const MAX_JSON_NESTING_LEVELS = 32;
/** Largest request body accepted, in bytes (64 KiB): bodies are commands, never documents. Larger → 413. */
export const MAX_REQUEST_BODY_BYTES = 64 * 1024;
/** How long a request may take to arrive, headers and body, in ms (Node's own default): then 408. */
export const MAX_REQUEST_ARRIVAL_MS = 300_000;
