import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { openSqliteReplayReader } from '../../event-store/sqlite/sqlite-event-store';
import { ProjectionApplyError } from '../projection-runner.errors';
import { trackOf, type ProjectionTrack } from '../projection-replay';
import type { Projection } from '../projection.types';
import { loadProjections } from '../projections-module';
import { openReadModelStore } from '../read-model.store';
import { serialiseError, type RebuildWorkerData, type RebuildWorkerMessage, type WorkerProjectionResult } from './parallel-rebuild.protocol';
import { replayProjectionGroup } from './projection-group-replay';
import { SharedRebuildState } from './shared-write-turn';

/**
 * A rebuild worker thread (started by rebuildProjectionsInParallel): replays its group of projections
 * from position 0 with its own connections, a read-only one to the log and one to the read-model
 * file, taking the shared write turn for each commit. Reports each committed page, then its result.
 */
async function run(port: MessagePort, data: RebuildWorkerData): Promise<void> {
  const post = (message: RebuildWorkerMessage): void => port.postMessage(message);
  const shared = new SharedRebuildState(data.shared);
  const projections = selectProjections(data);
  const types = new Set(projections.flatMap((projection) => projection.handles));
  const tracks = projections.map((projection) => trackOf(projection, undefined));
  let events: number;
  const reader = openSqliteReplayReader(data.logPath, [...types]);
  try {
    const store = openReadModelStore({ path: data.readModelPath, synchronous: data.synchronous, restoreIndexes: false });
    try {
      events = await replayProjectionGroup({
        reader,
        store,
        tracks,
        pageEvents: data.pageEvents,
        maxCachedDocuments: data.maxCachedDocuments,
        writeTurn: shared,
        shouldStop: () => shared.stopped,
        onPage: (page) => post({ kind: 'page', events: page.events, lastPosition: page.lastPosition }),
      });
    } finally {
      store.close();
    }
  } finally {
    reader.close();
  }
  // Sent with the files closed: the parent goes on without waiting for this thread to be torn down.
  post({ kind: 'done', events, projections: tracks.map(resultOf) });
}

/** The group's projections from the module, checked against the versions the parent reset. */
function selectProjections(data: RebuildWorkerData): Projection[] {
  const loaded = loadProjections({ path: data.projectionsModule, exportName: data.projectionsExport });
  return data.projections.map(({ name, version }) => {
    const projection = loaded.find((candidate) => candidate.name === name);
    if (projection === undefined || projection.version !== version) {
      throw new Error(`${data.projectionsModule} ${data.projectionsExport} has no projection "${name}" at version ${version}`);
    }
    return projection;
  });
}

function resultOf(track: ProjectionTrack): WorkerProjectionResult {
  const fault = track.fault;
  if (fault === undefined) return { name: track.projection.name, checkpoint: track.checkpoint };
  const error = serialiseError(fault.error);
  return {
    name: track.projection.name,
    checkpoint: track.checkpoint,
    fault: fault.error instanceof ProjectionApplyError ? { error, position: fault.position, eventType: fault.eventType } : { error },
  };
}

if (parentPort !== null) {
  const port = parentPort;
  run(port, workerData as RebuildWorkerData).catch((error: unknown) => {
    port.postMessage({ kind: 'failed', error: serialiseError(error) } satisfies RebuildWorkerMessage);
  });
}
