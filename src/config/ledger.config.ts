import { parseCreditValue, type CreditValue } from './credit-value';
import { isIP } from 'node:net';
import { embeddedLogFile, embeddedLogPath, IN_MEMORY_LOG_PATH, InvalidStoreUrlError, parseStoreUrl, type StoreLocation } from '../event-store/open-event-store';
import { DEFAULT_LOG_SYNCHRONOUS, type SqliteSynchronous } from '../event-store/sqlite/sqlite-synchronous';
import { pathBesideLog } from '../event-store/sqlite/path-beside-log';
import { integerSetting } from './integer-setting';
import { readModelPathFor } from '../projection-runner/read-model.store';
import { DEFAULT_PROJECTION_WORKER_NICE, MAX_PROJECTION_WORKER_NICE } from '../projection-runner/worker/projection-worker.host';
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RECOVERY_INTERVAL_MS,
  DEFAULT_RECOVERY_STALE_AFTER_MS,
  MAX_LEASE_DURATION_MS,
  MAX_RECOVERY_INTERVAL_MS,
  MAX_RECOVERY_STALE_AFTER_MS,
  MIN_LEASE_DURATION_MS,
  MIN_RECOVERY_INTERVAL_MS,
  MIN_RECOVERY_STALE_AFTER_MS,
  type RecoverySettings,
} from '../domain/recovery.settings';

/**
 * The service's configuration, read from the environment once at start (README.md "Configuration") and
 * validated, so a bad value stops the process with a message naming the variable instead of failing on
 * first use.
 */

export const ROLES = ['system', 'auditor', 'org_admin', 'org_member'] as const;
export type Role = (typeof ROLES)[number];

export interface TokenGrant {
  readonly role: Role;
  /** Required for org_admin and org_member: the one organization the token may act for. */
  readonly organizationId?: string;
}

export type ProjectionsThread = 'worker' | 'main';

export interface LedgerConfig {
  /**
   * The interface to listen on: `127.0.0.1` unless `HOST` says otherwise, so a service started with
   * the demo's public tokens is not reachable from other machines by accident. `0.0.0.0` (or `::`)
   * listens on all interfaces, which a deployment chooses on purpose.
   */
  readonly host: string;
  readonly port: number;
  /** `sqlite:<path>`, a `postgres://…` URL or an `esdb://…` / `kurrentdb://…` connection string, parsed. */
  readonly store: StoreLocation;
  /**
   * The SQLite file of the read models: beside the log for the embedded store
   * (`var/ledger.sqlite` → `var/ledger.read.sqlite`), a local file per instance with EventStoreDB.
   * `LEDGER_READ_STORE` overrides it.
   */
  readonly readStorePath: string;
  /**
   * Where the projections run: `worker` (a worker thread with its own connections; the default for the
   * embedded store in a file) or `main` (on the service's event loop; the only choice with EventStoreDB
   * or an in-memory log). `LEDGER_PROJECTIONS_THREAD` overrides the default.
   */
  readonly projectionsThread: ProjectionsThread;
  /**
   * The projection worker thread's nice value on Linux, 0 to MAX_PROJECTION_WORKER_NICE (0: the
   * service's own priority): `LEDGER_PROJECTIONS_NICE`, default DEFAULT_PROJECTION_WORKER_NICE. Only
   * with `projectionsThread` `worker`; elsewhere a thread's priority is its process's, left alone.
   */
  readonly projectionsNice: number;
  /**
   * The SQLite file of the answers kept for keyed repeats (features that declare a retention period):
   * beside the log for the embedded store (`var/ledger.sqlite` → `var/ledger.answers.sqlite`), a local
   * file per instance with EventStoreDB. `LEDGER_ANSWER_STORE` overrides it.
   */
  readonly answerStorePath: string;
  /** SQLite durability of the embedded log: `FULL` unless LEDGER_SQLITE_SYNCHRONOUS says NORMAL (README "Durability"). */
  readonly sqliteSynchronous: SqliteSynchronous;
  /**
   * `LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT=1`: accept a PostgreSQL server whose `synchronous_commit` is
   * off (an acknowledged append may then be lost in a server crash). Default false: such a server is
   * refused at start.
   */
  readonly postgresAllowAsyncCommit: boolean;
  readonly anthropicApiKey?: string;
  readonly anthropicBaseUrl?: string;
  /** Bearer token → grant. */
  readonly tokens: ReadonlyMap<string, TokenGrant>;
  /**
   * `LEDGER_IDEMPOTENCY_SECRET`: the key of request fingerprints (docs/http.md "Idempotency keys"),
   * shared by every instance on one log. Unset: generated once and kept in a file beside the embedded
   * store (or beside the read store with EventStoreDB, where each instance then has its own: set it
   * there).
   */
  readonly idempotencySecret?: string;
  /** `LEDGER_DEMO=1`: seed the demo catalog, organization and tokens, and print them. */
  readonly demo: boolean;
  /**
   * Recovery on start and on a period (docs/lifecycle.md "Recovery"): `LEDGER_RECOVERY_INTERVAL_MS`
   * (default 60,000; 0 turns it off) and `LEDGER_RECOVERY_STALE_AFTER_MS` (default 300,000).
   */
  readonly recovery: RecoverySettings;
  /**
   * `LEDGER_LEASE_DURATION_MS` (default 30,000): how long this instance's lease lasts after each
   * renewal (src/invocations/instance-lease.ts), so how soon another instance's recovery finishes
   * what it left when it dies.
   */
  readonly leaseDurationMs: number;
  /**
   * `LEDGER_CREDIT_VALUE` (e.g. `0.0001 USD`): what a credit is worth, so answers show money beside
   * credits (src/config/credit-value.ts); absent: no money is shown.
   */
  readonly creditValue?: CreditValue;
}

export const DEFAULT_HOST = '127.0.0.1';
/** Shortest LEDGER_IDEMPOTENCY_SECRET accepted, in characters: a key, not a password. */
export const MIN_IDEMPOTENCY_SECRET_CHARS = 32;
export const DEFAULT_PORT = 3000;
// An IP address or a host name (letters, digits, dots and hyphens).
const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?$/;
export const DEFAULT_STORE = 'sqlite:./var/ledger.sqlite';
/** Read models of an instance whose log is EventStoreDB. */
export const DEFAULT_EVENTSTOREDB_READ_STORE = './var/read-models.sqlite';
/** Answers kept by an instance whose log is EventStoreDB. */
export const DEFAULT_EVENTSTOREDB_ANSWER_STORE = './var/answers.sqlite';
const MAX_PORT = 65_535;

export class ConfigurationError extends Error {
  override readonly name = 'ConfigurationError';

  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
}

/**
 * Settings given in code (LedgerModule.forRoot's options); each one left out falls back to its
 * environment variable. A bad value is reported under its variable's name, so one message serves both.
 */
export interface LedgerSettings {
  /** `LEDGER_STORE`. */
  readonly store?: string;
  /** `LEDGER_READ_STORE`. */
  readonly readStore?: string;
  /** `LEDGER_ANSWER_STORE`. */
  readonly answerStore?: string;
  /** `LEDGER_SQLITE_SYNCHRONOUS`. */
  readonly synchronous?: SqliteSynchronous;
  /** `LEDGER_PROJECTIONS_THREAD`. */
  readonly projectionsThread?: ProjectionsThread;
  /** `ANTHROPIC_API_KEY`. */
  readonly anthropicApiKey?: string;
  /** `ANTHROPIC_BASE_URL`. */
  readonly anthropicBaseUrl?: string;
  /** `LEDGER_TOKENS`: bearer token → grant. */
  readonly tokens?: Readonly<Record<string, TokenGrant>>;
  /** `LEDGER_DEMO`. */
  readonly demo?: boolean;
  /** `LEDGER_RECOVERY_INTERVAL_MS` (0: off). */
  readonly recoveryIntervalMs?: number;
  /** `LEDGER_RECOVERY_STALE_AFTER_MS`. */
  readonly recoveryStaleAfterMs?: number;
}

/**
 * Parses and validates the environment, with `settings` taking precedence over their variables;
 * throws ConfigurationError listing every bad variable.
 */
export function loadLedgerConfig(
  environment: Readonly<Record<string, string | undefined>>,
  settings: LedgerSettings = {},
): LedgerConfig {
  const env = withSettings(environment, settings);
  const problems: string[] = [];

  const host = nonEmpty(env.HOST) ?? DEFAULT_HOST;
  if (isIP(host) === 0 && !HOST_NAME.test(host)) problems.push(`HOST: expected an IP address or a host name, got "${env.HOST}"`);
  const port = integerSetting('PORT', env.PORT, { min: 0, max: MAX_PORT }, problems) ?? DEFAULT_PORT;

  let store: StoreLocation = { kind: 'sqlite', path: './var/ledger.sqlite' };
  try {
    store = parseStoreUrl(nonEmpty(env.LEDGER_STORE) ?? DEFAULT_STORE);
  } catch (error) {
    if (!(error instanceof InvalidStoreUrlError)) throw error;
    problems.push(error.message);
  }
  const embeddedLog = embeddedLogPath(store);
  const readStorePath = nonEmpty(env.LEDGER_READ_STORE) ?? (embeddedLog !== undefined ? readModelPathFor(embeddedLog) : DEFAULT_EVENTSTOREDB_READ_STORE);

  const answerStorePath =
    nonEmpty(env.LEDGER_ANSWER_STORE) ??
    (embeddedLog !== undefined ? pathBesideLog(embeddedLog, 'answers') : DEFAULT_EVENTSTOREDB_ANSWER_STORE);
  const projections = parseProjections(env, store, readStorePath, problems);

  const synchronous = (nonEmpty(env.LEDGER_SQLITE_SYNCHRONOUS) ?? DEFAULT_LOG_SYNCHRONOUS).toUpperCase();
  if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
    problems.push(`LEDGER_SQLITE_SYNCHRONOUS: expected NORMAL or FULL, got "${env.LEDGER_SQLITE_SYNCHRONOUS}"`);
  }

  const allowAsyncCommit = nonEmpty(env.LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT);
  if (allowAsyncCommit !== undefined && !['0', '1'].includes(allowAsyncCommit)) {
    problems.push(`LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT: expected 1 or 0, got "${allowAsyncCommit}"`);
  }

  const anthropicBaseUrl = nonEmpty(env.ANTHROPIC_BASE_URL);
  if (anthropicBaseUrl !== undefined && !isHttpUrl(anthropicBaseUrl)) {
    problems.push(`ANTHROPIC_BASE_URL: expected an http(s) URL, got "${anthropicBaseUrl}"`);
  }

  const demoFlag = nonEmpty(env.LEDGER_DEMO);
  if (demoFlag !== undefined && !DEMO_FLAGS.includes(demoFlag)) problems.push(demoFlagProblem(demoFlag));

  const tokens = parseTokens(env.LEDGER_TOKENS, problems);

  const idempotencySecret = nonEmpty(env.LEDGER_IDEMPOTENCY_SECRET);
  if (idempotencySecret !== undefined && idempotencySecret.length < MIN_IDEMPOTENCY_SECRET_CHARS) {
    problems.push(`LEDGER_IDEMPOTENCY_SECRET: expected at least ${MIN_IDEMPOTENCY_SECRET_CHARS} characters, got ${idempotencySecret.length}`);
  }

  const timings = { ...parseRecoveryAndLease(env, problems), ...readCreditValue(env, problems) };
  if (problems.length > 0) throw new ConfigurationError(problems);
  return {
    host,
    port,
    store,
    readStorePath,
    answerStorePath,
    ...projections,
    sqliteSynchronous: synchronous as SqliteSynchronous,
    postgresAllowAsyncCommit: allowAsyncCommit === '1',
    anthropicApiKey: nonEmpty(env.ANTHROPIC_API_KEY),
    ...(idempotencySecret === undefined ? {} : { idempotencySecret }),
    anthropicBaseUrl,
    tokens,
    demo: demoFlag === '1' || demoFlag === 'true',
    ...timings,
  };
}

/** `LEDGER_CREDIT_VALUE`, when set and well formed; its problem goes to `problems`. */
function readCreditValue(env: Readonly<Record<string, string | undefined>>, problems: string[]): Pick<LedgerConfig, 'creditValue'> {
  const value = parseCreditValue(env.LEDGER_CREDIT_VALUE);
  if (value === undefined) return {};
  if ('problem' in value) {
    problems.push(value.problem);
    return {};
  }
  return { creditValue: value };
}

/** Recovery's settings, and `LEDGER_LEASE_DURATION_MS` (MIN_…–MAX_LEASE_DURATION_MS, never off: an instance always holds a lease). */
function parseRecoveryAndLease(env: Readonly<Record<string, string | undefined>>, problems: string[]): Pick<LedgerConfig, 'recovery' | 'leaseDurationMs'> {
  const recovery = parseRecovery(env, problems);
  const leaseDurationMs = parseMs(env, 'LEDGER_LEASE_DURATION_MS', DEFAULT_LEASE_DURATION_MS, problems, { min: MIN_LEASE_DURATION_MS, max: MAX_LEASE_DURATION_MS, off: false });
  return { recovery, leaseDurationMs };
}

/** The recovery period (0: off, else MIN_…–MAX_RECOVERY_INTERVAL_MS) and its staleness threshold. */
function parseRecovery(env: Readonly<Record<string, string | undefined>>, problems: string[]): RecoverySettings {
  const intervalMs = parseMs(env, 'LEDGER_RECOVERY_INTERVAL_MS', DEFAULT_RECOVERY_INTERVAL_MS, problems, {
    min: MIN_RECOVERY_INTERVAL_MS,
    max: MAX_RECOVERY_INTERVAL_MS,
    off: true,
  });
  const staleAfterMs = parseMs(env, 'LEDGER_RECOVERY_STALE_AFTER_MS', DEFAULT_RECOVERY_STALE_AFTER_MS, problems, {
    min: MIN_RECOVERY_STALE_AFTER_MS,
    max: MAX_RECOVERY_STALE_AFTER_MS,
    off: false,
  });
  return { intervalMs, staleAfterMs };
}

function parseMs(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  fallback: number,
  problems: string[],
  { min, max, off }: { readonly min: number; readonly max: number; readonly off: boolean },
): number {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (/^\d+$/.test(raw) && ((off && value === 0) || (value >= min && value <= max))) return value;
  problems.push(`${name}: expected ${off ? '0 (off) or ' : ''}an integer from ${min} to ${max} ms, got "${raw}"`);
  return fallback;
}

/** The environment as the settings override it: one parser and one set of messages for both. */
function withSettings(
  env: Readonly<Record<string, string | undefined>>,
  settings: LedgerSettings,
): Readonly<Record<string, string | undefined>> {
  const overrides: Record<string, string | undefined> = {
    LEDGER_STORE: settings.store,
    LEDGER_READ_STORE: settings.readStore,
    LEDGER_ANSWER_STORE: settings.answerStore,
    LEDGER_SQLITE_SYNCHRONOUS: settings.synchronous,
    LEDGER_PROJECTIONS_THREAD: settings.projectionsThread,
    ANTHROPIC_API_KEY: settings.anthropicApiKey,
    ANTHROPIC_BASE_URL: settings.anthropicBaseUrl,
    LEDGER_TOKENS: settings.tokens === undefined ? undefined : JSON.stringify(settings.tokens),
    LEDGER_DEMO: settings.demo === undefined ? undefined : settings.demo ? '1' : '0',
    LEDGER_RECOVERY_INTERVAL_MS: settings.recoveryIntervalMs === undefined ? undefined : String(settings.recoveryIntervalMs),
    LEDGER_RECOVERY_STALE_AFTER_MS: settings.recoveryStaleAfterMs === undefined ? undefined : String(settings.recoveryStaleAfterMs),
  };
  const merged: Record<string, string | undefined> = { ...env };
  for (const [name, value] of Object.entries(overrides)) if (value !== undefined) merged[name] = value;
  return merged;
}

/**
 * `LEDGER_DEMO` read on its own: main.ts needs it before the module graph exists, to mount the demo.
 * Throws ConfigurationError for a value other than 1, 0, true or false.
 */
export function demoRequested(env: Readonly<Record<string, string | undefined>>): boolean {
  const flag = nonEmpty(env.LEDGER_DEMO);
  if (flag !== undefined && !DEMO_FLAGS.includes(flag)) throw new ConfigurationError([demoFlagProblem(flag)]);
  return flag === '1' || flag === 'true';
}

const DEMO_FLAGS = ['0', '1', 'true', 'false'];
const demoFlagProblem = (flag: string): string => `LEDGER_DEMO: expected 1 or 0, got "${flag}"`;

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function parseProjectionsThread(
  value: string | undefined,
  store: StoreLocation,
  readStorePath: string,
  problems: string[],
): ProjectionsThread {
  const workerPossible = embeddedLogFile(store) !== undefined && readStorePath !== IN_MEMORY_LOG_PATH;
  const raw = nonEmpty(value)?.toLowerCase();
  if (raw === undefined) return workerPossible ? 'worker' : 'main';
  if (raw !== 'worker' && raw !== 'main') {
    problems.push(`LEDGER_PROJECTIONS_THREAD: expected worker or main, got "${value}"`);
    return 'main';
  }
  if (raw === 'worker' && !workerPossible) {
    problems.push(
      'LEDGER_PROJECTIONS_THREAD: worker needs the embedded store and its read models in files ' +
        '(LEDGER_STORE=sqlite:<path>, not :memory:, PostgreSQL or EventStoreDB)',
    );
  }
  return raw;
}

/** Where the projections run (`LEDGER_PROJECTIONS_THREAD`) and, on a worker thread, its priority (`LEDGER_PROJECTIONS_NICE`). */
function parseProjections(
  env: Readonly<Record<string, string | undefined>>,
  store: StoreLocation,
  readStorePath: string,
  problems: string[],
): Pick<LedgerConfig, 'projectionsThread' | 'projectionsNice'> {
  const projectionsThread = parseProjectionsThread(env.LEDGER_PROJECTIONS_THREAD, store, readStorePath, problems);
  return { projectionsThread, projectionsNice: parseProjectionsNice(env.LEDGER_PROJECTIONS_NICE, projectionsThread, problems) };
}

/** `LEDGER_PROJECTIONS_NICE`: an integer from 0 to MAX_PROJECTION_WORKER_NICE, for the projection worker thread only. */
function parseProjectionsNice(value: string | undefined, projectionsThread: ProjectionsThread, problems: string[]): number {
  const nice = integerSetting('LEDGER_PROJECTIONS_NICE', value, { min: 0, max: MAX_PROJECTION_WORKER_NICE }, problems);
  // Unset, or itself refused: not also refused for the thread it would set.
  if (nice === undefined) return DEFAULT_PROJECTION_WORKER_NICE;
  if (projectionsThread !== 'worker') {
    problems.push(
      'LEDGER_PROJECTIONS_NICE: sets the priority of the projection worker thread, and the projections run on the main thread here ' +
        '(LEDGER_PROJECTIONS_THREAD=main, or a log other than the embedded store in a file)',
    );
  }
  return nice;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

function parseTokens(value: string | undefined, problems: string[]): Map<string, TokenGrant> {
  const tokens = new Map<string, TokenGrant>();
  const raw = nonEmpty(value);
  if (raw === undefined) return tokens;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push('LEDGER_TOKENS: expected JSON of the form {"<token>": {"role": "...", "organizationId": "..."}}');
    return tokens;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    problems.push('LEDGER_TOKENS: expected a JSON object mapping each token to { role, organizationId? }');
    return tokens;
  }
  for (const [token, grant] of Object.entries(parsed as Record<string, unknown>)) {
    // Never echo the token itself: name it by position-free description only.
    const where = `LEDGER_TOKENS entry #${tokens.size + 1}`;
    if (token.trim().length === 0) {
      problems.push(`${where}: the token is empty`);
      continue;
    }
    const { role, organizationId } = (grant ?? {}) as { role?: unknown; organizationId?: unknown };
    if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) {
      problems.push(`${where}: role must be one of ${ROLES.join(', ')}`);
      continue;
    }
    const scoped = role === 'org_admin' || role === 'org_member';
    if (scoped && (typeof organizationId !== 'string' || organizationId.length === 0)) {
      problems.push(`${where}: role ${role} needs an organizationId`);
      continue;
    }
    tokens.set(token, scoped ? { role: role as Role, organizationId: organizationId as string } : { role: role as Role });
  }
  return tokens;
}

export const LEDGER_CONFIG = Symbol('LEDGER_CONFIG');
