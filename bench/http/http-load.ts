/**
 * The HTTP load of the benchmarks: `POST /v1/invocations` of `demo.arithmetic` for many
 * organizations, each request with its organization's own member token, driven by autocannon from
 * the benchmark's process (so the load generator's CPU is not the service's).
 */
import autocannon from 'autocannon';
import { DEMO_OPERATION_ID } from '../../src/demo/demo-catalog';

/** The organizations the load spreads over, as the in-process full path does. */
export const BENCH_ORGANIZATIONS = 100;
/** Credits granted to each organization: far more than any run spends (about 7 per invocation). */
export const BENCH_GRANT_CREDITS = 1_000_000_000;
/** Running slots of each organization: the highest allowed, so no request is refused for lack of one. */
export const BENCH_MAX_RUNNING = 1_000;
export const BENCH_QUESTION = 'What is (6+1)*6?';
const SYSTEM_TOKEN = 'demo-system-token';
/** How long one autocannon request may take before it counts as a timeout, in seconds. */
const REQUEST_TIMEOUT_SECONDS = 30;

export interface BenchOrganization {
  readonly organizationId: string;
  readonly token: string;
}

export function benchOrganizations(count = BENCH_ORGANIZATIONS): BenchOrganization[] {
  return Array.from({ length: count }, (_, index) => ({ organizationId: `org-${index}`, token: `bench-member-${index}` }));
}

/** LEDGER_TOKENS for the service: one org_member token per organization. */
export function tokensEnv(organizations: readonly BenchOrganization[]): string {
  return JSON.stringify(
    Object.fromEntries(organizations.map(({ organizationId, token }) => [token, { role: 'org_member', organizationId }])),
  );
}

export function invocationBody(organizationId: string): string {
  return JSON.stringify({ operationId: DEMO_OPERATION_ID, organizationId, input: { question: BENCH_QUESTION } });
}

async function call(baseUrl: string, method: string, path: string, token: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as unknown;
}

/** Funds every organization and lifts its running-slot limit, through the API as the operator. */
export async function fundOrganizations(baseUrl: string, organizations: readonly BenchOrganization[]): Promise<void> {
  for (const { organizationId } of organizations) {
    await call(baseUrl, 'POST', `/v1/organizations/${organizationId}/grants`, SYSTEM_TOKEN, {
      credits: BENCH_GRANT_CREDITS,
      reason: 'benchmark',
      idempotencyKey: 'bench-grant',
    });
    await call(baseUrl, 'PUT', `/v1/organizations/${organizationId}/settings`, SYSTEM_TOKEN, { maxRunning: BENCH_MAX_RUNNING });
  }
}

/**
 * Returns once the read models have caught up with everything the service has written: one more
 * invocation, then a read of it (reads wait for the read models to reach the log's head).
 */
export async function waitForReadModels(baseUrl: string, organization: BenchOrganization): Promise<void> {
  const { invocationId } = (await call(baseUrl, 'POST', '/v1/invocations', organization.token, JSON.parse(invocationBody(organization.organizationId)))) as {
    invocationId: string;
  };
  await call(baseUrl, 'GET', `/v1/invocations/${invocationId}`, organization.token);
}

export interface LoadResult {
  readonly connections: number;
  readonly seconds: number;
  /** Responses 200 with a settled, completed invocation. */
  readonly completed: number;
  readonly completedPerSecond: number;
  /** Responses 200 whose invocation was refused or ended otherwise (none expected). */
  readonly notCompleted: number;
  readonly non2xx: number;
  /** Connection errors, timeouts included. */
  readonly errors: number;
  /** Requests unanswered after REQUEST_TIMEOUT_SECONDS (also counted in `errors`). */
  readonly timeouts: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  readonly latencyMeanMs: number;
}

export interface LoadOptions {
  readonly baseUrl: string;
  readonly organizations: readonly BenchOrganization[];
  readonly connections: number;
  readonly durationSeconds: number;
  /** Called with every completed invocation (the soak counts them per minute). */
  readonly onCompleted?: () => void;
}

/**
 * Closed-loop load: `connections` connections, each sending its next request when the previous one is
 * answered. Each connection starts at another organization, so they do not all queue on one account.
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  let completed = 0;
  let notCompleted = 0;
  const onResponse = (status: number, body: string): void => {
    if (status !== 200) return;
    // The answer is the settled invocation; a refusal answers 200 too, so the body says which.
    if (body.includes('"state":"settled"') && body.includes('"outcome":"completed"')) {
      completed++;
      options.onCompleted?.();
    } else notCompleted++;
  };
  const requestFor = ({ organizationId, token }: BenchOrganization): autocannon.Request => ({
    method: 'POST',
    path: '/v1/invocations',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: invocationBody(organizationId),
    onResponse,
  });
  const requests = options.organizations.map(requestFor);
  let connection = 0;
  const result = await autocannon({
    url: options.baseUrl,
    connections: options.connections,
    duration: options.durationSeconds,
    timeout: REQUEST_TIMEOUT_SECONDS,
    requests,
    setupClient: (client) => {
      const start = connection++ % requests.length;
      client.setRequests([...requests.slice(start), ...requests.slice(0, start)]);
    },
  });
  const seconds = result.duration;
  return {
    connections: options.connections,
    seconds,
    completed,
    completedPerSecond: Math.round(completed / seconds),
    notCompleted,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    latencyMeanMs: Math.round(result.latency.mean * 100) / 100,
  };
}
