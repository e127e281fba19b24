/** Largest request body accepted, in bytes (64 KiB): bodies are commands, never documents. Larger → 413. */
export const MAX_REQUEST_BODY_BYTES = 64 * 1024;
