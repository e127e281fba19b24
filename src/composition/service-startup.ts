import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import pino from 'pino';
import { ConfigurationError, loadLedgerConfig, type LedgerConfig } from '../config/ledger.config';
import { parseLedgerWorkers } from '../config/service-workers.config';
import { loadObservabilityConfig, type ObservabilityConfig } from '../observability/observability.config';
import { loadWebhooksConfig, type WebhooksConfig } from '../webhooks/webhooks.config';
import { ReadStoreLock, ReadStoreLockedError, readStoreLockPath } from '../projection-runner/read-store.lock';
import { PostgresAsyncCommitError, PostgresTransactionCounterBehindError } from '../event-store/postgres/postgres-event-store';

/*
 * The standalone service's start, before its application exists: the checks that need nothing
 * written, and how a failed start is reported (one log line and an exit status by kind; README
 * "Configuration" lists them).
 */

/** Anything not foreseen below: a defect, or a failure of the host. */
export const EXIT_STARTUP_UNEXPECTED = 1;
/** A variable (or an option given in code) is bad; the line names every bad one. */
export const EXIT_STARTUP_CONFIGURATION = 2;
/** A store could not be opened: its read models in use by another process, or a file not writable. */
export const EXIT_STARTUP_STORE = 3;
/** A port is in use or not allowed, or HOST is not an address of this machine. */
export const EXIT_STARTUP_ADDRESS = 4;

export type StartupFailureKind = 'configuration' | 'store' | 'address' | 'unexpected';

const EXIT_CODES: Readonly<Record<StartupFailureKind, number>> = {
  unexpected: EXIT_STARTUP_UNEXPECTED,
  configuration: EXIT_STARTUP_CONFIGURATION,
  store: EXIT_STARTUP_STORE,
  address: EXIT_STARTUP_ADDRESS,
};

/** What a failed start reports: its one line, the exit status, and the fields that help an operator. */
export interface StartupFailure {
  readonly kind: StartupFailureKind;
  readonly exitCode: number;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** The variable that sets an address the service listens on. */
type AddressVariable = 'PORT' | 'METRICS_PORT';

/** A port the service is to listen on cannot be had. */
export class AddressUnavailableError extends Error {
  override readonly name = 'AddressUnavailableError';

  constructor(
    readonly variable: AddressVariable,
    readonly host: string,
    readonly port: number,
    readonly code: string,
  ) {
    super(`${variable} ${host}:${port}: ${code}`);
  }
}

/** What the service is configured with, validated whole: every bad variable is named at once. */
export interface ServiceConfiguration {
  readonly ledger: LedgerConfig;
  readonly observability: ObservabilityConfig;
  readonly webhooks: WebhooksConfig;
  /** `LEDGER_WORKERS`: service processes on the one port (src/composition/service-workers.ts). */
  readonly workers: number;
}

/**
 * Everything a start can find wrong before it writes anything: the variables (ledger, webhooks and
 * together, one ConfigurationError naming all), then each port, then the read models' lock. A
 * worker (`ports: false`) leaves the ports to its primary: the one it listens on is shared.
 */
export async function preflight(env: Readonly<Record<string, string | undefined>>, { ports = true }: { readonly ports?: boolean } = {}): Promise<ServiceConfiguration> {
  const problems: string[] = [];
  const attempt = <T>(load: () => T): T | undefined => {
    try {
      return load();
    } catch (error) {
      if (!(error instanceof ConfigurationError)) throw error;
      problems.push(...error.problems);
      return undefined;
    }
  };
  const ledger = attempt(() => loadLedgerConfig(env));
  const webhooks = attempt(() => loadWebhooksConfig(env));
  const observability = attempt(() => loadObservabilityConfig(env));
  const workers = parseLedgerWorkers(env, ledger?.store, problems);
  if (ledger === undefined || webhooks === undefined || observability === undefined || problems.length > 0) throw new ConfigurationError(problems);
  if (ports) {
    await ensurePortFree('PORT', ledger.host, ledger.port);
    if (observability.metricsPort !== undefined) await ensurePortFree('METRICS_PORT', observability.metricsHost, observability.metricsPort);
  }
  ensureReadStoreFree(ledger.readStorePath);
  return { ledger, observability, webhooks, workers };
}

/**
 * Binds the port and lets it go at once. Port 0 (any free port) is always free. Another process can
 * still take the port before the service binds it; the service then fails the same way, later.
 */
export function ensurePortFree(variable: AddressVariable, host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => reject(new AddressUnavailableError(variable, host, port, error.code ?? 'EADDRINUSE')));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/**
 * Takes the read models' lock and lets it go: held by a running service or a rebuild, the start stops
 * here, before the event store is opened. A folder that does not exist yet holds no lock.
 */
export function ensureReadStoreFree(readStorePath: string): void {
  if (readStorePath === ':memory:' || !existsSync(dirname(readStoreLockPath(readStorePath)))) return;
  ReadStoreLock.acquire(readStorePath, 'service').release();
}

/** A failed start as the operator reads it: what went wrong and the variable that fixes it. */
export function describeStartupFailure(error: unknown): StartupFailure {
  const failure = (kind: StartupFailureKind, message: string, fields: Record<string, unknown> = {}): StartupFailure => ({
    kind,
    exitCode: EXIT_CODES[kind],
    message: `llm-ledger: ${message}`,
    fields,
  });
  if (error instanceof ConfigurationError) {
    return failure('configuration', `invalid configuration — ${error.problems.join('; ')}`, { problems: error.problems });
  }
  if (error instanceof AddressUnavailableError || isListenError(error)) return addressFailure(error, failure);
  if (error instanceof ReadStoreLockedError) {
    const readStore = error.lockPath.replace(/\.lock$/, '');
    return failure(
      'store',
      `the read models at ${readStore} are in use by another running service or a rebuild — stop it, or set LEDGER_READ_STORE ` +
        'to give this instance read models of its own',
      { readStore },
    );
  }
  if (error instanceof PostgresAsyncCommitError) return failure('store', error.message, { setting: 'synchronous_commit' });
  if (error instanceof PostgresTransactionCounterBehindError) return failure('store', error.message);
  const fileError = storeFileError(error);
  if (fileError !== undefined) {
    return failure('store', `${fileError} — check LEDGER_STORE, LEDGER_READ_STORE and LEDGER_ANSWER_STORE`);
  }
  // pino writes an Error under `err` as its type, message and stack, inside the one JSON line.
  const message = error instanceof Error ? error.message : String(error);
  return failure('unexpected', `could not start: ${message}`, { err: error instanceof Error ? error : { message } });
}

function addressFailure(
  error: AddressUnavailableError | NodeJS.ErrnoException,
  failure: (kind: StartupFailureKind, message: string, fields?: Record<string, unknown>) => StartupFailure,
): StartupFailure {
  const { variable, host, port, code } =
    error instanceof AddressUnavailableError
      ? error
      : { variable: 'PORT' as const, host: (error as { address?: string }).address ?? '', port: (error as { port?: number }).port ?? 0, code: error.code };
  const fields = { variable, host, port, code };
  switch (code) {
    case 'EACCES':
      return failure('address', `port ${port} needs privileges this user does not have — set ${variable}`, fields);
    case 'EADDRNOTAVAIL':
      return failure('address', `HOST ${host} is not an address of this machine — set HOST`, fields);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return failure('address', `HOST ${host} does not resolve to an address — set HOST`, fields);
    default:
      return failure('address', `port ${port} is in use — set ${variable}`, fields);
  }
}

/** Listening failed (the port was taken after the check, between it and the service binding it). */
function isListenError(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && (error as NodeJS.ErrnoException).syscall === 'listen';
}

/** A store file that could not be opened or written, in words; undefined for any other error. */
function storeFileError(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, path } = error as NodeJS.ErrnoException;
  // better-sqlite3's errors carry SQLite's result code (SQLITE_CANTOPEN, SQLITE_NOTADB, …).
  if (error.name === 'SqliteError' || code?.startsWith('SQLITE_') === true) {
    return `a SQLite store could not be opened (${error.message.replace(/^SqliteError: /, '')})`;
  }
  if (path !== undefined && ['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'ENOTDIR', 'EISDIR'].includes(code ?? '')) {
    return `${path} could not be written (${code})`;
  }
  return undefined;
}

/**
 * Writes the failure as the service's log writes its lines (pino's JSON, one object per line, on
 * stdout), synchronously, so it is out before the process exits.
 */
export function logStartupFailure(failure: StartupFailure, destination: pino.DestinationStream = pino.destination({ dest: 1, sync: true })): void {
  pino(destination).fatal({ context: 'Startup', kind: failure.kind, exitCode: failure.exitCode, ...failure.fields }, failure.message);
}
