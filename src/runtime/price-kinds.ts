/**
 * The priced kinds of usage, one row each. Everything that names a kind is derived from this table:
 * the `Usage` and `Prices` types, the publication's and the rate card's validation (domain and DTO),
 * `ratesFor` and `priceAttempt`, the OpenAPI schema, the statement's CSV columns and the console's
 * usage tables. A new kind is one row here (docs/architecture.md, "where does my change go").
 *
 * Imports nothing: the console's bundle reads it too.
 */

/** Prices of token kinds are quoted per this many tokens (per million). */
export const TOKENS_PER_PRICE_UNIT = 1_000_000;
/** Web searches are quoted per this many searches. */
export const SEARCHES_PER_PRICE_UNIT = 1_000;
/** The largest rate, in credits per million tokens, for each token kind. */
export const MAX_PRICE_PER_MTOK_CREDITS = 1_000_000_000;
/** The largest web-search rate, in credits per 1,000 searches. */
export const MAX_WEB_SEARCH_PER_THOUSAND_CREDITS = 1_000_000_000;

/**
 * How the worst-case hold of a gateway call bounds a kind's count (docs/gateway.md, "How the hold is
 * bounded"; src/gateway/worst-case-hold.ts gives each its figure):
 * - `inputBound`: every kind with this bound, together, is at most the request's input bound: what
 *   the model could read, in every sampling step together;
 * - `maxTokens`: at most the request's `max_tokens`;
 * - `webSearches`: at most the searches the request's web-search tools may make.
 * Kinds sharing a bound share its count, so the hold prices it at the highest of their rates.
 */
export const WORST_CASE_BOUNDS = ['inputBound', 'maxTokens', 'webSearches'] as const;
export type WorstCaseBound = (typeof WORST_CASE_BOUNDS)[number];

export interface PriceKind {
  /** The count's field in `Usage`. */
  readonly usage: string;
  /** The rate's field in `Prices`. */
  readonly rate: string;
  /** What is counted: the unit of the usage figure. */
  readonly unit: 'tokens' | 'searches';
  /** How many units one rate quote prices (1,000,000 tokens, 1,000 searches). */
  readonly unitsPerRate: number;
  /** The largest rate a publisher may set, in credits per `unitsPerRate` units. */
  readonly maxRate: number;
  /**
   * What an absent rate means: `required` (no default), another kind's rate, or 0 credits. Stored
   * rate versions are complete: the default is filled in when the rate version is written.
   */
  readonly fallback: 'required' | { readonly sameAs: string } | { readonly credits: 0 };
  /**
   * True when a long-context rate set (and a mode's own rate set, such as `fast`) replaces this rate;
   * false when the kind keeps its one rate whatever the attempt's size or mode.
   */
  readonly replaceable: boolean;
  /** True when the kind counts toward the attempt's input (the long-context threshold, the input bound). */
  readonly input: boolean;
  /**
   * The worst-case allowance: which of the hold's bounds caps the kind's count. Required, so a new
   * kind cannot be priced without the hold covering it.
   */
  readonly worstCase: WorstCaseBound;
  /** How the usage figure is described (OpenAPI, docs). */
  readonly usageDescription: string;
  /** How the rate is described (OpenAPI, docs). */
  readonly rateDescription: string;
}

export const PRICE_KINDS = [
  {
    usage: 'inputTokens',
    rate: 'inputPerMTok',
    unit: 'tokens',
    unitsPerRate: TOKENS_PER_PRICE_UNIT,
    maxRate: MAX_PRICE_PER_MTOK_CREDITS,
    fallback: 'required',
    replaceable: true,
    input: true,
    worstCase: 'inputBound',
    usageDescription: 'Uncached input tokens.',
    rateDescription: 'Credits per million uncached input tokens.',
  },
  {
    usage: 'outputTokens',
    rate: 'outputPerMTok',
    unit: 'tokens',
    unitsPerRate: TOKENS_PER_PRICE_UNIT,
    maxRate: MAX_PRICE_PER_MTOK_CREDITS,
    fallback: 'required',
    replaceable: true,
    input: false,
    worstCase: 'maxTokens',
    usageDescription: 'Output tokens.',
    rateDescription: 'Credits per million output tokens.',
  },
  {
    usage: 'cacheWriteTokens',
    rate: 'cacheWritePerMTok',
    unit: 'tokens',
    unitsPerRate: TOKENS_PER_PRICE_UNIT,
    maxRate: MAX_PRICE_PER_MTOK_CREDITS,
    fallback: 'required',
    replaceable: true,
    input: true,
    worstCase: 'inputBound',
    usageDescription: 'Tokens written to the cache with the 5-minute lifetime.',
    rateDescription: 'Credits per million cache-write tokens with the 5-minute lifetime.',
  },
  {
    usage: 'cacheWrite1hTokens',
    rate: 'cacheWrite1hPerMTok',
    unit: 'tokens',
    unitsPerRate: TOKENS_PER_PRICE_UNIT,
    maxRate: MAX_PRICE_PER_MTOK_CREDITS,
    fallback: { sameAs: 'cacheWritePerMTok' },
    replaceable: true,
    input: true,
    worstCase: 'inputBound',
    usageDescription: 'Tokens written to the cache with the 1-hour lifetime.',
    rateDescription: 'Credits per million cache-write tokens with the 1-hour lifetime; absent: `cacheWritePerMTok`.',
  },
  {
    usage: 'cacheReadTokens',
    rate: 'cacheReadPerMTok',
    unit: 'tokens',
    unitsPerRate: TOKENS_PER_PRICE_UNIT,
    maxRate: MAX_PRICE_PER_MTOK_CREDITS,
    fallback: 'required',
    replaceable: true,
    input: true,
    worstCase: 'inputBound',
    usageDescription: 'Tokens read from the cache.',
    rateDescription: 'Credits per million cache-read tokens.',
  },
  {
    usage: 'webSearchRequests',
    rate: 'webSearchPerThousand',
    unit: 'searches',
    unitsPerRate: SEARCHES_PER_PRICE_UNIT,
    maxRate: MAX_WEB_SEARCH_PER_THOUSAND_CREDITS,
    fallback: { credits: 0 },
    replaceable: false,
    input: false,
    worstCase: 'webSearches',
    usageDescription: 'Server-side web searches.',
    rateDescription: 'Credits per 1,000 server-side web searches; absent: 0.',
  },
] as const satisfies readonly PriceKind[];

type Row = (typeof PRICE_KINDS)[number];
/** A usage count's field: `inputTokens`, `outputTokens`, … */
export type UsageKind = Row['usage'];
/** A rate's field: `inputPerMTok`, … */
export type RateField = Row['rate'];
/** The rates a rate version must state. */
export type RequiredRate = Extract<Row, { fallback: 'required' }>['rate'];
/** The rates a rate version may leave out (their fallback fills them). */
export type OptionalRate = Exclude<RateField, RequiredRate>;
/** The rates a long-context (or mode) rate set replaces. */
export type ReplaceableRate = Extract<Row, { replaceable: true }>['rate'];

/** The priced kinds of usage, in the order statements and tables show them. */
export const USAGE_KINDS: readonly UsageKind[] = PRICE_KINDS.map((kind) => kind.usage);
/** Every rate field, in the table's order. */
export const RATE_FIELDS: readonly RateField[] = PRICE_KINDS.map((kind) => kind.rate);
/** The rates a long-context rate set holds, in the table's order. */
export const REPLACEABLE_RATES: readonly ReplaceableRate[] = PRICE_KINDS.filter((kind) => kind.replaceable).map(
  (kind) => kind.rate as ReplaceableRate,
);
/** The usage kinds that count as the attempt's input. */
export const INPUT_USAGE_KINDS: readonly UsageKind[] = PRICE_KINDS.filter((kind) => kind.input).map((kind) => kind.usage);
