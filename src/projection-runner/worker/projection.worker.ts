import { setPriority } from 'node:os';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { openSqliteEventStore } from '../../event-store/sqlite/sqlite-event-store';
import { ProjectionRunner, type ProjectionRunnerLogger } from '../projection-runner';
import { loadProjections } from '../projections-module';
import { openReadModelStore } from '../read-model.store';
import type { HostMessage, ProjectionWorkerData, WorkerMessage } from './projection-worker.protocol';

/**
 * The projection worker thread (started by ProjectionWorkerHost): a ProjectionRunner with its own
 * connections to the log and to the read-model file, so reading events back, running the projections
 * and committing documents all happen off the service's event loop. The host signals each commit of
 * the log; the worker reports its checkpoints after each read-model commit. Between signals the
 * runner's subscription still polls the file, so a lost signal only delays.
 *
 * It also checkpoints the log's write-ahead log (PASSIVE: never waits for the writer), so that the
 * copy into the database file and its fsync mostly happen here rather than inside the service's commits.
 */
function run(port: MessagePort, data: ProjectionWorkerData): void {
  const post = (message: WorkerMessage): void => port.postMessage(message);
  const eventStore = openSqliteEventStore({ path: data.logPath, follows: { unsyncedMarker: data.logUnsyncedMarker } });
  const store = openReadModelStore({ path: data.readModelPath });
  let runner: ProjectionRunner | undefined;
  const report = (): void => {
    if (runner !== undefined) post({ kind: 'status', status: runner.status() });
  };
  const logger: ProjectionRunnerLogger = {
    log: (message) => post({ kind: 'log', level: 'log', message }),
    warn: (message) => post({ kind: 'log', level: 'warn', message }),
    error: (message) => {
      post({ kind: 'log', level: 'error', message });
      // Faults and failures are logged as they happen: the host learns of them at once.
      queueMicrotask(report);
    },
  };
  yieldToTheCalls(data.nice, logger);
  runner = new ProjectionRunner({
    eventStore,
    store,
    projections: loadProjections(data.projections),
    liveBatchIntervalMs: data.liveBatchIntervalMs,
    logger,
    onCommit: report,
  });
  const checkpointTimer = setInterval(() => {
    try {
      eventStore.checkpointWal();
    } catch (error) {
      logger.warn(`Checkpoint of the log's write-ahead log failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }, data.logCheckpointIntervalMs);

  const close = async (): Promise<void> => {
    clearInterval(checkpointTimer);
    await runner!.stop();
    await eventStore.close();
    store.close();
  };

  port.on('message', (message: HostMessage) => {
    switch (message.kind) {
      case 'head':
        eventStore.pollNow();
        return;
      case 'hurry':
        // Its only purpose is the immediate commit; the outcome reaches the host as status.
        runner!.waitFor(message.position, { projections: message.projections }).catch(() => undefined);
        return;
      case 'stop':
        void close().then(
          () => post({ kind: 'stopped', status: runner!.status() }),
          (error: unknown) => {
            logger.error(`Stopping failed: ${error instanceof Error ? error.message : String(error)}`);
            post({ kind: 'stopped', status: runner!.status() });
          },
        ).finally(() => port.close());
        return;
    }
  });

  runner.start().then(
    () => post({ kind: 'started', status: runner!.status() }),
    (error: unknown) => {
      post({ kind: 'start-failed', error: error instanceof Error ? error : new Error(String(error)), status: runner!.status() });
      void close().finally(() => port.close());
    },
  );
}

if (parentPort !== null) run(parentPort, workerData as ProjectionWorkerData);

/**
 * Lowers this thread's priority to `nice` (DEFAULT_PROJECTION_WORKER_NICE). On Linux a thread's nice
 * value is its own (setpriority with pid 0 names the calling thread); elsewhere it would be the whole
 * process's, so it is left alone there.
 */
function yieldToTheCalls(nice: number, logger: ProjectionRunnerLogger): void {
  if (nice === 0 || process.platform !== 'linux') return;
  try {
    setPriority(nice);
  } catch (error) {
    logger.warn(`The projection worker could not lower its priority to nice ${nice}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
