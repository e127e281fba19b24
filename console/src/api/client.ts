/**
 * The console's only way to the service: the public HTTP API on the same origin, with the session's
 * bearer token in the Authorization header (never in a URL, so it cannot leak into a log, a history
 * entry or a pasted link).
 */

/** The API's one error shape, as far as the console uses it. */
interface ErrorBody {
  readonly code?: string;
  readonly message?: string;
  readonly requestId?: string;
  /** For `invalid_request`: each bad field by its path, with what is wrong with it. */
  readonly fields?: Readonly<Record<string, readonly string[]>>;
}

/** A request the API answered with an error status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly requestId?: string,
    readonly fields: Readonly<Record<string, readonly string[]>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type QueryValue = string | number | undefined;

/** A path with its query string; undefined and empty values are left out. */
export function withQuery(path: string, query: Readonly<Record<string, QueryValue>>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** Encodes one path segment (ids may hold characters a URL reserves). */
export const segment = (id: string): string => encodeURIComponent(id);

export class ApiClient {
  constructor(
    private readonly token: string,
    /** Told when the service refuses the token, so the session can ask for another. */
    private readonly onUnauthorized: () => void,
  ) {}

  /** GETs JSON; any non-2xx answer becomes an ApiError with the API's code and message. */
  async get<T>(path: string, signal?: AbortSignal): Promise<T> {
    const response = await this.fetch(path, { headers: { Accept: 'application/json' }, ...(signal ? { signal } : {}) });
    return (await response.json()) as T;
  }

  /** Sends a write (`POST`, `PATCH`, `DELETE`) with a JSON body, if any, and reads its JSON answer. */
  async send<T>(method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: object): Promise<T> {
    const init: RequestInit = { method, headers: { Accept: 'application/json', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) } };
    const response = await this.fetch(path, body === undefined ? init : { ...init, body: JSON.stringify(body) });
    return (await response.json()) as T;
  }

  /** The raw response of a successful request, for streams (Server-Sent Events). */
  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${this.token}`);
    const response = await fetch(path, { ...init, headers, credentials: 'omit', cache: 'no-store' });
    if (response.ok) return response;
    const body = (await response.json().catch(() => ({}))) as ErrorBody;
    if (response.status === 401) this.onUnauthorized();
    throw new ApiError(response.status, body.code, body.message ?? response.statusText, body.requestId, body.fields);
  }
}

/** What a page says when a read fails, in the words a person needs. */
export function describeError(error: unknown, what: string): string {
  if (!(error instanceof ApiError)) return `Could not load ${what}: ${error instanceof Error ? error.message : String(error)}`;
  switch (error.status) {
    case 404:
      // The API answers the same for another organization's resource: so does the console.
      return `Not found: ${what} does not exist, or your token may not read it.`;
    case 403:
      return `Your token’s role may not read ${what}.`;
    case 401:
      return 'The service did not accept the token.';
    case 503:
      return `The service could not read ${what} just now (${error.message}); try again shortly.`;
    default:
      return `Could not load ${what}: ${error.message}${error.requestId ? ` (request ${error.requestId})` : ''}`;
  }
}

/** What a write's refusal says, in a person's words: each bad field with its problems, or why it failed. */
export function describeWriteError(error: unknown, what: string): string {
  if (error instanceof ApiError && error.status === 400 && Object.keys(error.fields).length > 0) {
    return `The service refused to ${what}: ${Object.entries(error.fields)
      .map(([field, problems]) => `${field} ${problems.join(', ')}`)
      .join('; ')}.`;
  }
  if (error instanceof ApiError && error.status === 403) return `Your token’s role may not ${what}.`;
  return `Could not ${what}: ${error instanceof Error ? error.message : String(error)}${error instanceof ApiError && error.requestId ? ` (request ${error.requestId})` : ''}`;
}
