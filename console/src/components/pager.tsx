import { useState } from 'preact/hooks';

/**
 * Cursor paging as the API offers it (an opaque cursor to the next page): the cursors of the pages
 * already seen are kept, so Previous goes back without the API having to page backwards.
 */
export function useCursorPages(): {
  readonly cursor: string | undefined;
  readonly pageNumber: number;
  next(cursor: string): void;
  previous(): void;
  reset(): void;
} {
  const [trail, setTrail] = useState<readonly (string | undefined)[]>([undefined]);
  return {
    cursor: trail[trail.length - 1],
    pageNumber: trail.length,
    next: (cursor) => setTrail((seen) => [...seen, cursor]),
    previous: () => setTrail((seen) => (seen.length > 1 ? seen.slice(0, -1) : seen)),
    reset: () => setTrail([undefined]),
  };
}

export function Pager({ label, pageNumber, nextCursor, onNext, onPrevious }: {
  label: string;
  pageNumber: number;
  nextCursor: string | undefined;
  onNext: (cursor: string) => void;
  onPrevious: () => void;
}) {
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" class="secondary" disabled={pageNumber <= 1} onClick={onPrevious}>
        Previous page
      </button>
      <span aria-live="polite">Page {pageNumber}</span>
      <button type="button" class="secondary" disabled={nextCursor === undefined} onClick={() => nextCursor !== undefined && onNext(nextCursor)}>
        Next page
      </button>
    </nav>
  );
}
