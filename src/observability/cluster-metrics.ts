/**
 * Metrics of a service run as several workers (LEDGER_WORKERS, README.md "Metrics"): each worker's
 * series carry a `worker` label (its slot, 1 to N), and `GET /metrics` answers for all workers
 * whichever one takes the request, and so does METRICS_PORT, which the primary serves. prom-client's
 * AggregatorRegistry collects the workers' registries over the cluster's IPC channel; with the
 * `worker` label on every series nothing is summed across workers.
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/** The label naming the worker a series comes from. */
export const WORKER_LABEL = 'worker';
const REQUEST = 'llm-ledger:cluster-metrics';
const ANSWER = 'llm-ledger:cluster-metrics-answer';

/** Where a metrics listener reads what it answers. */
export interface MetricsExposition {
  readonly contentType: string;
  exposition(): Promise<string>;
}

interface ClusterMetricsMessage {
  readonly type: string;
  readonly id: number;
  readonly body?: string;
  readonly error?: string;
}

/**
 * In the primary: every worker's metrics in one exposition, for METRICS_PORT, and the same for any
 * worker that asks on behalf of its `GET /metrics`.
 */
export function clusterMetricsExposition(): MetricsExposition {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker: Worker, message: ClusterMetricsMessage) => {
    if (message?.type !== REQUEST) return;
    aggregator.clusterMetrics().then(
      (body) => worker.isConnected() && worker.send({ type: ANSWER, id: message.id, body }),
      (error: unknown) => worker.isConnected() && worker.send({ type: ANSWER, id: message.id, error: String(error) }),
    );
  });
  return { contentType: aggregator.contentType, exposition: () => aggregator.clusterMetrics() };
}

/**
 * In a worker: labels `registry`'s series with the worker's slot, hands it to the primary's
 * collection, and returns how to read all workers' metrics through the primary.
 */
export function joinClusterMetrics(registry: Registry, slot: number): () => Promise<string> {
  registry.setDefaultLabels({ [WORKER_LABEL]: String(slot) });
  // Constructing one registers prom-client's answer to the primary's collection in this worker.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  let nextId = 0;
  const waiting = new Map<number, { resolve: (body: string) => void; reject: (error: Error) => void }>();
  process.on('message', (message: ClusterMetricsMessage) => {
    if (message?.type !== ANSWER) return;
    const waiter = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error !== undefined) waiter?.reject(new Error(message.error));
    else waiter?.resolve(message.body ?? '');
  });
  return () =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      process.send!({ type: REQUEST, id } satisfies ClusterMetricsMessage, undefined, undefined, (error: Error | null) => {
        if (error === null) return;
        waiting.delete(id);
        reject(error);
      });
    });
}
