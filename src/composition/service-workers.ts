import cluster, { type Worker } from 'node:cluster';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import pino from 'pino';
import { embeddedLogPath } from '../event-store/open-event-store';
import { WORKER_SLOT_VARIABLE, WORKERS_READ_STORE_VARIABLE, workerReadStorePath } from '../config/service-workers.config';
import { clusterMetricsExposition } from '../observability/cluster-metrics';
import { MetricsServer } from '../observability/metrics.server';
import { idempotencySecretPathFor, keptSecret } from './idempotency-secret.provider';
import { ensureReadStoreFree, type ServiceConfiguration } from './service-startup';

/*
 * The primary of `LEDGER_WORKERS=N` (docs/deploying.md "Workers"): it forks N service processes on
 * the one port (node:cluster hands each connection to a worker in turn), serves METRICS_PORT for all
 * of them, replaces a worker that dies, and on SIGTERM or SIGINT drains them all. It opens no store
 * and answers no call itself. Each worker is an instance like any other on the log: its own lease,
 * its own aggregate cache, its own projections and read models (worker k's file beside
 * LEDGER_READ_STORE), so a worker that dies is recovered as any instance is, by the lease it held.
 */

/** How long the primary waits before replacing a worker that died, in ms: one that dies at once does not spin. */
export const WORKER_RESTART_DELAY_MS = 1_000;
/** How long a worker may take to drain after SIGTERM (its calls in flight settled) before it is killed, in ms. */
export const WORKER_DRAIN_TIMEOUT_MS = 30_000;

/** A worker stopped before it listened: the start fails with its exit status (it logged why). */
export class WorkerStartError extends Error {
  constructor(
    readonly slot: number,
    readonly exitCode: number,
  ) {
    super(`worker ${slot} stopped before it listened (exit status ${exitCode})`);
  }
}

export class ServiceWorkers {
  private readonly workers = new Map<number, Worker>();
  private readonly restarts = new Set<NodeJS.Timeout>();
  private draining = false;
  private readonly metricsServer = new MetricsServer(clusterMetricsExposition());
  private readonly env: Readonly<Record<string, string>>;

  constructor(
    private readonly service: ServiceConfiguration,
    private readonly log: pino.Logger = pino(pino.destination({ dest: 1, sync: true })).child({ context: 'Workers' }),
  ) {
    this.env = sharedWorkerEnv(service);
  }

  /**
   * Starts worker 1 (it creates or migrates the log and seeds the demo alone), then the others at
   * once, then METRICS_PORT. Resolves with the port they listen on; if a worker stops before it
   * listens, stops the others and rejects with its exit status.
   */
  async start(): Promise<number> {
    const count = this.service.workers;
    for (let slot = 1; slot <= count; slot++) ensureReadStoreFree(workerReadStorePath(this.service.ledger.readStorePath, slot));
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void this.drain(signal));
    let port: number;
    try {
      port = await this.startSlot(1);
      await Promise.all(Array.from({ length: count - 1 }, (_, index) => this.startSlot(index + 2)));
    } catch (error) {
      await this.stopAll();
      throw error;
    }
    const { metricsPort, metricsHost } = this.service.observability;
    if (metricsPort !== undefined) {
      const listening = await this.metricsServer.listen(metricsPort, metricsHost);
      this.log.info(`metrics of all ${count} workers without a token on ${metricsHost}:${listening}/metrics`);
    }
    return port;
  }

  /** Forks the worker of `slot`; resolves with its port once it listens, rejects if it stops before. */
  private startSlot(slot: number): Promise<number> {
    const { readStorePath } = this.service.ledger;
    const worker = cluster.fork({
      ...this.env,
      [WORKER_SLOT_VARIABLE]: String(slot),
      [WORKERS_READ_STORE_VARIABLE]: readStorePath,
      LEDGER_READ_STORE: workerReadStorePath(readStorePath, slot),
    });
    this.workers.set(slot, worker);
    return new Promise((resolve, reject) => {
      let listened = false;
      worker.once('listening', (address) => {
        listened = true;
        resolve(address.port);
      });
      worker.once('exit', (code, signal) => {
        if (this.workers.get(slot) === worker) this.workers.delete(slot);
        if (!listened) reject(new WorkerStartError(slot, code ?? 1));
        else this.replace(slot, code, signal);
      });
    });
  }

  /** A worker that listened has stopped: unless the service is draining, another takes its slot. */
  private replace(slot: number, code: number | null, signal: string | null): void {
    if (this.draining) return;
    this.log.warn({ worker: slot, code, signal }, `worker ${slot} stopped (${signal ?? `exit status ${code}`}); starting another in its place`);
    const timer = setTimeout(() => {
      this.restarts.delete(timer);
      if (this.draining) return;
      this.startSlot(slot).then(
        () => this.log.info({ worker: slot }, `worker ${slot} replaced`),
        (error: unknown) => {
          this.log.error({ worker: slot }, `worker ${slot} could not be replaced: ${String(error)}; trying again`);
          this.replace(slot, null, null);
        },
      );
    }, WORKER_RESTART_DELAY_MS);
    this.restarts.add(timer);
  }

  /** SIGTERM or SIGINT: every worker drains (closes its port, settles what it runs, closes its store), then the primary exits. */
  private async drain(signal: NodeJS.Signals): Promise<void> {
    if (this.draining) return;
    this.log.info({ signal }, `${signal}: draining ${this.workers.size} workers`);
    await this.stopAll();
    await this.metricsServer.close();
    process.exit(0);
  }

  private async stopAll(): Promise<void> {
    this.draining = true;
    for (const timer of this.restarts) clearTimeout(timer);
    await Promise.all([...this.workers.values()].map((worker) => stopWorker(worker)));
  }
}

/** Sends SIGTERM and waits for the worker to exit, killing it after WORKER_DRAIN_TIMEOUT_MS. */
function stopWorker(worker: Worker): Promise<void> {
  if (worker.process.exitCode !== null || worker.process.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => worker.process.kill('SIGKILL'), WORKER_DRAIN_TIMEOUT_MS);
    worker.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    worker.process.kill('SIGTERM');
  });
}

/**
 * What every worker's environment adds: no METRICS_PORT (the primary serves it for all), and on a
 * server's log without LEDGER_IDEMPOTENCY_SECRET the secret kept beside LEDGER_READ_STORE, so the
 * workers recognise each other's requests (on the embedded log they share the file beside it).
 */
export function sharedWorkerEnv(service: Pick<ServiceConfiguration, 'ledger'>): Record<string, string> {
  const { ledger } = service;
  const shareSecret = ledger.idempotencySecret === undefined && embeddedLogPath(ledger.store) === undefined;
  if (!shareSecret) return { METRICS_PORT: '' };
  const secretPath = idempotencySecretPathFor(ledger.readStorePath);
  // Before any worker has opened its read models there, their folder may not exist yet.
  mkdirSync(dirname(secretPath), { recursive: true });
  return { METRICS_PORT: '', LEDGER_IDEMPOTENCY_SECRET: keptSecret(secretPath).toString('utf8') };
}

/** Whether this process is the primary of several workers (else it serves calls itself). */
export function runsWorkers(service: ServiceConfiguration): boolean {
  return cluster.isPrimary && service.workers > 1;
}
