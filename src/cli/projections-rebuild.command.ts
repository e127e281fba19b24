import { availableParallelism } from 'node:os';
import { ALL_PROJECTIONS, ALL_PROJECTIONS_MODULE } from '../../projections';
import type { EventStore } from '../event-store/event-store.port';
import { rebuildProjections, type Projection, type ProjectionsModule, type RebuildIntoResult, type SqliteReadModelStore } from '../projection-runner';
import { rebuildProjectionsInParallel, type ParallelRebuildOptions } from '../projection-runner/rebuild/parallel-rebuild';
import { EXIT_DIFFERENCES, EXIT_OK, EXIT_USAGE, writeLine, type CliIo } from './cli-io';
import { progressReporter } from './progress';
import { countOf } from '../domain/wording';

export interface ProjectionsRebuildOptions {
  readonly eventStore: EventStore;
  /** The live read-model store, rebuilt in place. */
  readonly readStore: SqliteReadModelStore;
  readonly io: CliIo;
  /** Names of the projections to rebuild; default every one. */
  readonly names?: readonly string[];
  /** Default ALL_PROJECTIONS: the projections the names are chosen from. */
  readonly projections?: readonly Projection[];
  /**
   * Where worker threads load `projections` from (default ALL_PROJECTIONS_MODULE, with the default
   * projections only): given `projections` without it are rebuilt on this thread.
   */
  readonly projectionsModule?: ProjectionsModule;
  /** See ProgressOptions.positionsCountEvents. */
  readonly positionsCountEvents?: boolean;
  /**
   * The embedded log's file: with it, and more than one core, the projections are rebuilt on worker
   * threads (rebuildProjectionsInParallel); without it (EventStoreDB), on this thread.
   */
  readonly logPath?: string;
}

/**
 * `llm-ledger projections rebuild`: wipes the chosen projections in the read-model store and replays
 * the log from position 0 into them, with progress on stderr. Meant for a stopped service: a running
 * one's projection runner would find its checkpoints moved under it and stop.
 */
export async function projectionsRebuild(options: ProjectionsRebuildOptions): Promise<number> {
  const available = options.projections ?? ALL_PROJECTIONS;
  const selected = selectProjections(available, options.names);
  if (typeof selected === 'string') {
    await writeLine(options.io.stderr, `llm-ledger projections rebuild: ${selected}`);
    return EXIT_USAGE;
  }
  const startedMs = options.io.now();
  const progress = progressReporter(options.io, { label: 'rebuild', positionsCountEvents: options.positionsCountEvents ?? false });
  // Progress writes are chained, so lines keep their order and memory stays constant.
  let progressWrites = Promise.resolve();
  const result = await rebuild(options, {
    eventStore: options.eventStore,
    store: options.readStore,
    projections: selected,
    onProgress: (page) => {
      progressWrites = progressWrites.then(() => progress.update(page));
    },
  });
  await progressWrites;
  await progress.finish();

  let faulted = 0;
  for (const projection of result.projections) {
    const at = projection.checkpoint === undefined ? 'nothing applied' : `position ${projection.checkpoint}`;
    if (projection.fault === undefined) {
      await writeLine(options.io.stdout, `rebuilt ${projection.name} up to ${at}`);
      continue;
    }
    faulted += 1;
    const on = projection.fault.eventType === undefined ? '' : ` on ${projection.fault.eventType} at ${projection.fault.position}`;
    await writeLine(options.io.stderr, `projection ${projection.name} stopped at ${at}${on}: ${projection.fault.error.message}`);
  }
  const seconds = ((options.io.now() - startedMs) / 1_000).toFixed(1);
  await writeLine(
    options.io.stdout,
    `projections rebuild: ${result.projections.length - faulted} of ${countOf(result.projections.length, 'projection')} rebuilt from ${countOf(result.events, 'event')} in ${seconds} s`,
  );
  return faulted === 0 ? EXIT_OK : EXIT_DIFFERENCES;
}

/**
 * On worker threads, in the groups derived from the log for the selected projections (rebuildGroups),
 * when the log is a file, worker threads can load the projections and there are cores to share;
 * otherwise on this thread.
 */
function rebuild(
  options: ProjectionsRebuildOptions,
  rebuildOptions: Omit<ParallelRebuildOptions, 'logPath' | 'projectionsModule'>,
): Promise<RebuildIntoResult> {
  const projectionsModule = options.projectionsModule ?? (options.projections === undefined ? ALL_PROJECTIONS_MODULE : undefined);
  if (options.logPath === undefined || projectionsModule === undefined || availableParallelism() < 2) {
    return rebuildProjections(rebuildOptions);
  }
  return rebuildProjectionsInParallel({ ...rebuildOptions, logPath: options.logPath, projectionsModule });
}

/** The projections named, in the runner's order; a message when a name is unknown. */
function selectProjections(available: readonly Projection[], names: readonly string[] | undefined): Projection[] | string {
  if (names === undefined || names.length === 0) return [...available];
  const known = new Set(available.map((projection) => projection.name));
  const unknown = names.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    return `unknown projection ${unknown.map((name) => JSON.stringify(name)).join(', ')}; known: ${[...known].join(', ')}`;
  }
  return available.filter((projection) => names.includes(projection.name));
}
