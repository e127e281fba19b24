import cluster from 'node:cluster';
import { embeddedLogPath, IN_MEMORY_LOG_PATH, type StoreLocation } from '../event-store/open-event-store';
import { pathBesideLog } from '../event-store/sqlite/path-beside-log';
import { integerSetting } from './integer-setting';

/*
 * The standalone service's process model (docs/deploying.md "Workers"): `LEDGER_WORKERS=N` runs N
 * service processes on one port over one log, each an instance of its own (its lease, its aggregate
 * cache, its projections and read models), started and restarted by a primary process that serves
 * no request itself (src/composition/service-workers.ts).
 */

/**
 * Service processes when `LEDGER_WORKERS` is not set: one, the process itself, no primary. Measured
 * (bench/README.md "Every core"): on two shared cores two workers served 0.31–0.97 × one worker's
 * calls per second at 1.8–3.1 × its CPU per call, so more workers are the operator's choice.
 */
export const DEFAULT_LEDGER_WORKERS = 1;
/** Most service processes one primary starts: far above any core count this runs on, and bounded. */
export const MAX_LEDGER_WORKERS = 64;
/** Set by the primary on each worker it forks: the worker's slot, 1 to N, which its replacement keeps. */
export const WORKER_SLOT_VARIABLE = 'LEDGER_WORKER';
/** Set by the primary on each worker it forks: the LEDGER_READ_STORE it was given, beside which the workers share their webhooks. */
export const WORKERS_READ_STORE_VARIABLE = 'LEDGER_WORKERS_READ_STORE';

/** `LEDGER_WORKERS`, validated: an integer from 1 to MAX_LEDGER_WORKERS, and above 1 only on a log several processes can open. */
export function parseLedgerWorkers(env: Readonly<Record<string, string | undefined>>, store: StoreLocation | undefined, problems: string[]): number {
  const workers = integerSetting('LEDGER_WORKERS', env.LEDGER_WORKERS, { min: 1, max: MAX_LEDGER_WORKERS }, problems) ?? DEFAULT_LEDGER_WORKERS;
  if (workers > 1 && store !== undefined && embeddedLogPath(store) === IN_MEMORY_LOG_PATH) {
    problems.push(`LEDGER_WORKERS: ${workers} workers need a log they can share; an in-memory log (sqlite::memory:) lives in one process`);
    return DEFAULT_LEDGER_WORKERS;
  }
  return workers;
}

/** This process's worker slot (1 to N) when a primary started it; undefined in a service of one process. */
export function serviceWorkerSlot(): number | undefined {
  if (!cluster.isWorker) return undefined;
  const slot = Number(process.env[WORKER_SLOT_VARIABLE]);
  return Number.isInteger(slot) && slot >= 1 ? slot : undefined;
}

/**
 * A worker's read models: worker 1 keeps `LEDGER_READ_STORE` (so the CLI's `projections rebuild`
 * and `audit verify` read what it serves), worker k a file of its own beside it
 * (`ledger.read.sqlite` → `ledger.read.worker-2.sqlite`), which its replacement takes over.
 */
export function workerReadStorePath(readStorePath: string, slot: number): string {
  if (slot === 1 || readStorePath === IN_MEMORY_LOG_PATH) return readStorePath;
  return pathBesideLog(readStorePath, `worker-${slot}`);
}

/**
 * The read store the service was configured with, whichever worker asks: the webhooks' file beside
 * it is one for all workers (a webhook registered through one is listed and delivered by all).
 */
export function sharedReadStorePath(readStorePath: string): string {
  return serviceWorkerSlot() === undefined ? readStorePath : (process.env[WORKERS_READ_STORE_VARIABLE] ?? readStorePath);
}

/** Whether this process delivers webhooks: a service of one process, or worker 1 of several (one sender, so one send per delivery). */
export function deliversWebhooks(): boolean {
  const slot = serviceWorkerSlot();
  return slot === undefined || slot === 1;
}
