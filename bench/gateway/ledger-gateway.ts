/**
 * llm-ledger's gateway as a peer: the service in its own process (`node dist/src/main.js` on a fresh
 * embedded store, no demo), ANTHROPIC_BASE_URL at the bench upstream, set up through its own API as
 * docs/gateway.md describes: a rate card for the model, credits for one organization (with room for
 * 64 calls running at once), a gateway key; calls then go to `POST /anthropic/v1/messages` with
 * `x-api-key: <key>`. With BENCH_GATEWAY_ORGANIZATIONS above 1, as many organizations are set up
 * alike, each with its key, and the load's loops share them out (loop-keys.ts). Until that route
 * answers, the peer is "not available" with the reason.
 */
import { SERVICE_START_TIMEOUT_MS, ServiceProcess } from '../http/service-process';
import { ANTHROPIC_VERSION, BENCH_MODEL, UPSTREAM_API_KEY, requestBody } from './messages-wire';

export const LEDGER_SYSTEM_TOKEN = 'bench-gateway-system-token';
const ORGANIZATION_ID = 'bench-gateway-org';
/** Most organizations a run sets up (BENCH_GATEWAY_ORGANIZATIONS): each takes three API calls, and one per extra key. */
export const MAX_BENCH_ORGANIZATIONS = 1_000;
/** Credits per million tokens, about a mid-size model's list price in micro-dollars. */
const RATE_CARD = {
  prices: { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheReadPerMTok: 300_000 },
  maxOutputTokens: 4_096,
  attemptTimeoutMs: 60_000,
  enabled: true,
};
/** The largest grant the API takes; a call holds about 20,000 and costs about 3,000 of these. */
const GRANT_CREDITS = 1_000_000_000_000;
/** Running calls an organization may have: the highest allowed, above the benchmark's 64. */
const MAX_RUNNING = 1_000;
/** How long the service may stay busy after a run (its projections catching up), in milliseconds. */
const QUIET_TIMEOUT_MS = 60_000;
/** Busy below this share of one core over QUIET_WINDOW_MS counts as quiet. */
const QUIET_CPU_SHARE = 0.05;
const QUIET_WINDOW_MS = 1_000;
const EXCERPT_CHARS = 300;

/** How the benchmark's organizations are set up: how many (calls spread over them) and the keys each holds. */
export interface LedgerSetup {
  /** Keys each organization holds, the one called with among them (the others are issued first and never called with). */
  readonly organizationKeys: number;
  readonly organizations: number;
}

export type LedgerPeer =
  | { readonly available: true; readonly service: ServiceProcess; /** The key called with, one per organization. */ readonly keys: readonly string[] }
  | { readonly available: false; readonly service: ServiceProcess; readonly reason: string };

async function call(service: ServiceProcess, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${service.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${LEDGER_SYSTEM_TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, text: await response.text() };
}

function unavailable(service: ServiceProcess, what: string, answer: { status: number; text: string }): LedgerPeer {
  return { available: false, service, reason: `${what} answered ${answer.status}: ${answer.text.slice(0, EXCERPT_CHARS)}` };
}

/** The primary's line once all its workers listen (src/main.ts). */
const ALL_WORKERS_LISTENING = /\d+ workers listening on \S+ port (\d+)/;

export async function startLedger(options: {
  readonly upstreamBaseUrl: string;
  readonly nodeFlags: readonly string[];
  readonly store?: string;
  /** LEDGER_WORKERS (default 1: the service in one process). */
  readonly workers?: number;
  /** Another build's `dist` directory to run instead of this one's (ServiceOptions.distRoot). */
  readonly distRoot?: string;
  /** Keys each organization holds, the one called with among them (default 1): the others are issued first and never called with. */
  readonly organizationKeys?: number;
  /** Organizations set up alike, calls spread over them (default 1). */
  readonly organizations?: number;
}): Promise<LedgerPeer> {
  const workers = options.workers ?? 1;
  const service = await ServiceProcess.start({
    demo: false,
    nodeFlags: options.nodeFlags,
    ...(options.store === undefined ? {} : { store: options.store }),
    ...(options.distRoot === undefined ? {} : { distRoot: options.distRoot }),
    // Worker 1 starts first, then the others at once: two starts' time.
    ...(workers === 1 ? {} : { listening: ALL_WORKERS_LISTENING, startTimeoutMs: 2 * SERVICE_START_TIMEOUT_MS }),
    env: {
      LEDGER_TOKENS: JSON.stringify({ [LEDGER_SYSTEM_TOKEN]: { role: 'system' } }),
      ANTHROPIC_BASE_URL: options.upstreamBaseUrl,
      ANTHROPIC_API_KEY: UPSTREAM_API_KEY,
      LEDGER_WORKERS: String(workers),
    },
  });
  const rateCard = await call(service, 'PUT', `/v1/gateway/models/${BENCH_MODEL}`, RATE_CARD);
  if (rateCard.status >= 300) return unavailable(service, `rate card: PUT /v1/gateway/models/${BENCH_MODEL}`, rateCard);
  const keys: string[] = [];
  for (let index = 0; index < (options.organizations ?? 1); index++) {
    const organization = await setUpOrganization(service, index === 0 ? ORGANIZATION_ID : `${ORGANIZATION_ID}-${index + 1}`, options.organizationKeys ?? 1);
    if (typeof organization !== 'string') return organization;
    keys.push(organization);
  }
  const probe = await fetch(`${service.baseUrl}/anthropic/v1/messages`, {
    method: 'POST',
    headers: { ...anthropicHeaders(), 'x-api-key': keys[0]! },
    body: requestBody({ stream: false, bytes: 256 }),
  });
  const text = await probe.text();
  if (probe.status !== 200 || !text.includes('"usage"')) return unavailable(service, 'first call: POST /anthropic/v1/messages', { status: probe.status, text });
  return { available: true, service, keys };
}

/** Credits, room to run and `organizationKeys` keys for one organization: the key to call with, or why the service refused. */
async function setUpOrganization(service: ServiceProcess, organizationId: string, organizationKeys: number): Promise<string | LedgerPeer> {
  const steps: Array<[string, string, string, unknown]> = [
    ['grant', 'POST', `/v1/organizations/${organizationId}/grants`, { credits: GRANT_CREDITS, reason: 'gateway benchmark', idempotencyKey: 'bench-gateway-grant' }],
    ['settings', 'PUT', `/v1/organizations/${organizationId}/settings`, { maxRunning: MAX_RUNNING }],
  ];
  for (const [what, method, path, body] of steps) {
    const answer = await call(service, method, path, body);
    if (answer.status >= 300) return unavailable(service, `${what}: ${method} ${path}`, answer);
  }
  const keyPath = `/v1/organizations/${organizationId}/gateway-keys`;
  for (let other = 1; other < organizationKeys; other++) {
    const answer = await call(service, 'POST', keyPath, { name: `bench ${other}` });
    if (answer.status >= 300) return unavailable(service, `gateway key ${other}: POST ${keyPath}`, answer);
  }
  const issued = await call(service, 'POST', keyPath, { name: 'bench' });
  const key = issued.status < 300 ? (JSON.parse(issued.text) as { key?: unknown }).key : undefined;
  return typeof key === 'string' ? key : unavailable(service, `gateway key: POST ${keyPath}`, issued);
}

export function anthropicHeaders(): Record<string, string> {
  return { 'content-type': 'application/json', 'anthropic-version': ANTHROPIC_VERSION };
}

/** The service's Prometheus exposition (GET /metrics, system token). */
export async function scrapeMetrics(service: ServiceProcess): Promise<string> {
  const answer = await call(service, 'GET', '/metrics');
  return answer.status === 200 ? answer.text : '';
}

/**
 * Waits until the service is quiet (its projection worker caught up with the run), so the next
 * peer's run does not share the cores with it. Returns how long that took, in milliseconds.
 */
export async function waitUntilQuiet(service: ServiceProcess): Promise<number> {
  const started = performance.now();
  let before = await service.usage();
  while (performance.now() - started < QUIET_TIMEOUT_MS) {
    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    const after = await service.usage();
    const share = (after.cpuMicros - before.cpuMicros) / 1000 / QUIET_WINDOW_MS;
    if (share < QUIET_CPU_SHARE) break;
    before = after;
  }
  return Math.round(performance.now() - started);
}
