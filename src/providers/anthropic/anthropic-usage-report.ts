/**
 * Anthropic's own usage figures: the Admin API's Messages usage report
 * (`GET /v1/organizations/usage_report/messages`), read with an Admin API key through the SDK's
 * client. SDK 1.x has no typed method for this report, so its documented HTTP shape is read here:
 * `{ data: [{ starting_at, ending_at, results: [{ model, uncached_input_tokens,
 * cache_creation: { ephemeral_5m_input_tokens, ephemeral_1h_input_tokens }, cache_read_input_tokens,
 * output_tokens, server_tool_use: { web_search_requests }, … }] }], has_more, next_page }`.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { Usage } from '../../runtime/provider.port';
import { NO_USAGE } from '../../runtime/usage';

export const USAGE_REPORT_PATH = '/v1/organizations/usage_report/messages';
/** Pages read for one report at most: 31 days of daily buckets or 168 hours per page, so a year fits well within. */
export const MAX_USAGE_REPORT_PAGES = 1_000;
/** Buckets per page asked for: the report's maximum for each width. */
const PAGE_BUCKETS: Readonly<Record<UsageBucketWidth, number>> = { '1d': 31, '1h': 168 };

export type UsageBucketWidth = '1h' | '1d';

export interface UsageReportRequest {
  /** RFC 3339, included. */
  readonly startingAt: string;
  /** RFC 3339, excluded. */
  readonly endingAt: string;
  readonly bucketWidth: UsageBucketWidth;
  /** Only this API key's usage. */
  readonly apiKeyId?: string;
}

/** One bucket's usage of one model, as Anthropic counted it. */
export interface ReportedUsage {
  /** The bucket's start, RFC 3339 as the report gives it. */
  readonly bucket: string;
  readonly model: string;
  readonly usage: Usage;
}

export interface UsageReportClientOptions {
  /** An Admin API key (`sk-ant-admin…`). */
  readonly adminApiKey: string;
  readonly baseURL?: string;
  /** Per request, in ms. */
  readonly timeoutMs?: number;
}

/** Thrown when the report's answer is not in the documented shape. */
export class UsageReportShapeError extends Error {
  override readonly name = 'UsageReportShapeError';
}

export class AnthropicUsageReportClient {
  private readonly client: Anthropic;

  constructor(options: UsageReportClientOptions) {
    // No retries of the SDK's own: a failed read is reported, and the operator runs it again. The Admin
    // API documents its key in `x-api-key`; this SDK would send a key as a bearer token, so none is
    // given (null also keeps it from reading ANTHROPIC_API_KEY) and the header is set instead.
    this.client = new Anthropic({
      apiKey: null,
      authToken: null,
      defaultHeaders: { 'x-api-key': options.adminApiKey },
      ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
      maxRetries: 0,
      timeout: options.timeoutMs ?? 60_000,
      logLevel: 'warn',
    });
  }

  /** Every page of the report, grouped by model, as one list of (bucket, model, usage). */
  async read(request: UsageReportRequest): Promise<ReportedUsage[]> {
    const rows: ReportedUsage[] = [];
    let page: string | undefined;
    for (let pages = 0; pages < MAX_USAGE_REPORT_PAGES; pages += 1) {
      const query: Record<string, unknown> = {
        starting_at: request.startingAt,
        ending_at: request.endingAt,
        bucket_width: request.bucketWidth,
        group_by: ['model'],
        limit: PAGE_BUCKETS[request.bucketWidth],
        ...(request.apiKeyId === undefined ? {} : { api_key_ids: [request.apiKeyId] }),
        ...(page === undefined ? {} : { page }),
      };
      const body: unknown = await this.client.get(USAGE_REPORT_PATH, { query });
      const { data, hasMore, nextPage } = readPage(body);
      rows.push(...data);
      if (!hasMore) return rows;
      if (nextPage === undefined) throw new UsageReportShapeError('the report says has_more but gives no next_page');
      page = nextPage;
    }
    throw new UsageReportShapeError(`the report did not end within ${MAX_USAGE_REPORT_PAGES} pages`);
  }
}

function readPage(body: unknown): { data: ReportedUsage[]; hasMore: boolean; nextPage: string | undefined } {
  const page = objectOf(body, 'the report');
  if (!Array.isArray(page.data)) throw new UsageReportShapeError('the report has no data array');
  const data: ReportedUsage[] = [];
  for (const bucketValue of page.data) {
    const bucket = objectOf(bucketValue, 'a bucket');
    if (typeof bucket.starting_at !== 'string') throw new UsageReportShapeError('a bucket has no starting_at');
    for (const resultValue of Array.isArray(bucket.results) ? bucket.results : []) {
      const result = objectOf(resultValue, 'a result');
      const cacheCreation = typeof result.cache_creation === 'object' && result.cache_creation !== null ? (result.cache_creation as Record<string, unknown>) : {};
      const serverTools = typeof result.server_tool_use === 'object' && result.server_tool_use !== null ? (result.server_tool_use as Record<string, unknown>) : {};
      data.push({
        bucket: bucket.starting_at,
        model: typeof result.model === 'string' ? result.model : '',
        usage: {
          ...NO_USAGE,
          inputTokens: count(result.uncached_input_tokens),
          outputTokens: count(result.output_tokens),
          cacheWriteTokens: count(cacheCreation.ephemeral_5m_input_tokens),
          cacheWrite1hTokens: count(cacheCreation.ephemeral_1h_input_tokens),
          cacheReadTokens: count(result.cache_read_input_tokens),
          webSearchRequests: count(serverTools.web_search_requests),
        },
      });
    }
  }
  return { data, hasMore: page.has_more === true, nextPage: typeof page.next_page === 'string' && page.next_page !== '' ? page.next_page : undefined };
}

function objectOf(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageReportShapeError(`${what} is not an object`);
  return value as Record<string, unknown>;
}

function count(value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new UsageReportShapeError(`a count is not a non-negative integer: ${JSON.stringify(value)}`);
  return value;
}
