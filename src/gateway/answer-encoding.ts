/**
 * The content codings the relay can decode (docs/gateway.md, Relaying): an answer upstream sent
 * compressed is decoded as it arrives, so the accounting reads its usage and the caller receives it
 * re-framed without a `content-encoding` (any client reads that), its event boundaries intact for
 * the relay to hold the last event back. llm-ledger asks upstream for no coding (`accept-encoding:
 * identity`), so this runs only for an upstream, or a proxy before it, that compresses anyway.
 */
import type { Transform } from 'node:stream';
import { createBrotliDecompress, createUnzip } from 'node:zlib';

/** A coding the relay decodes, by its `content-encoding` name. */
const DECODERS: Readonly<Record<string, () => Transform>> = {
  // Unzip reads a gzip or a zlib header alike: `deflate` is zlib-wrapped as HTTP defines it.
  gzip: createUnzip,
  'x-gzip': createUnzip,
  deflate: createUnzip,
  br: createBrotliDecompress,
};

/**
 * How an answer with this `content-encoding` is read: `identity` as it came, `decode` through the
 * transform, `opaque` when the coding is one the relay cannot decode (relayed as sent, unread).
 */
export type AnswerCoding = { readonly kind: 'identity' } | { readonly kind: 'decode'; readonly decoder: Transform } | { readonly kind: 'opaque' };

export function answerCodingOf(contentEncoding: string | undefined): AnswerCoding {
  const coding = contentEncoding?.trim().toLowerCase() ?? '';
  if (coding === '' || coding === 'identity') return { kind: 'identity' };
  const decoder = Object.hasOwn(DECODERS, coding) ? DECODERS[coding] : undefined;
  return decoder === undefined ? { kind: 'opaque' } : { kind: 'decode', decoder: decoder() };
}
