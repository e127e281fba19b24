/**
 * One simulated ledger process: the real application (AppModule, every module the service runs) with
 * the virtual clock in place of CLOCK, the fault-injecting wrapper around the configured event
 * store, and the projection runner without its wall-clock batch window, plus a second process's command handlers on the same log (their own repository and cache,
 * so their appends race the node's through optimistic concurrency, as two processes' would).
 *
 * A crash kills the node: its store refuses every call, its conversations are stopped, and the
 * simulator starts a new node on the same log (everything in memory is lost).
 */
import { IDEMPOTENCY_SECRET } from '../invocations/request-fingerprint';
import { RunningInvocations } from '../invocations/running-invocations';
import { InvocationEndings } from '../invocations/invocation-endings';
import { LEDGER_UPCASTERS } from '../upcasters/ledger.upcasters';
import { Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Test } from '@nestjs/testing';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { ANSWER_STORE, type AnswerStore } from '../answer-store/answer-store.port';
import { AppModule } from '../composition/app.module';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { ALL_PROJECTIONS } from '../../projections';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import { openEventStore } from '../event-store/open-event-store';
import { FeatureRegistry } from '../features/feature.registry';
import { LedgerFeaturesModule } from '../features/ledger-features.module';
import type { OperationFeature } from '../features/operation-feature';
import type { InvocationSummary } from '../invocations/invocation.state';
import { RunOperationCommand, type RunOperationRequest } from '../invocations/run-operation.command';
import { KeyedRepeats } from '../invocations/keyed-repeats';
import { RunOperationHandler } from '../invocations/run-operation.handler';
import { INVOCATION_INSTRUMENTATION, type InvocationInstrumentation } from '../invocations/invocation-instrumentation.port';
import { SweepStaleInvocationsCommand, type SweepReport } from '../invocations/sweep-stale-invocations.command';
import { SWEEP_CANDIDATES, type SweepCandidates } from '../invocations/sweep-candidates.port';
import { SweepStaleInvocationsHandler } from '../invocations/sweep-stale-invocations.handler';
import { InvocationRecovery } from '../invocations/invocation-recovery';
import { INSTANCE_LEASE } from '../invocations/instance-lease';
import { InstanceLeaseKeeper } from '../invocations/instance-lease.keeper';
import { CLOCK } from '../domain/clock.token';
import { RETRY_JITTER } from '../domain/retry-jitter.token';
import { LiveProjections, ProjectionRunner, type ProjectionRunnerOptions, type SqliteReadModelStore, type WaitOptions } from '../projection-runner';
import { ProviderRegistry } from '../providers/provider.registry';
import type { RandomSource } from '../runtime';
import { READ_MODEL_STORE } from '../projection-runner';
import { GATEWAY_ACCOUNTING, type GatewayAccounting } from '../gateway/gateway-call.port';
import { GatewayAdmin } from '../gateway/gateway-admin.service';
import { GatewayCalls, type GatewayCallIds } from '../gateway/gateway-calls.service';
import type { ActivityProbe } from './event-loop-pump';
import { FaultyEventStore, type StoreFaultController } from './faulty-event-store';
import type { RecoveryPlan } from './scenario';
import type { SimulationClock } from './simulation-clock';

export interface LedgerNodeOptions {
  /** The application's environment: LEDGER_STORE and LEDGER_READ_STORE at least. */
  readonly env: Readonly<Record<string, string>>;
  readonly clock: SimulationClock;
  /** The retry jitter (RETRY_JITTER) of this node and of its second process: the seeded stream. */
  readonly random: RandomSource;
  readonly features: readonly OperationFeature[];
  readonly controller: StoreFaultController;
  readonly probe: ActivityProbe;
  /** Show the ledger's own log lines (off by default: the simulator reports what matters). */
  readonly logs?: boolean;
  /** Each process's recovery: the node's (its application's own) and the second process's. */
  readonly recovery: RecoveryPlan;
  /** Told how each recovery pass ended, so the simulator can count it and judge its errors. */
  readonly onRecoveryPass: (pass: RecoveryPassEnd) => void;
  /** Gateway calls' invocation ids, drawn in call order so a seed replays the same streams. */
  readonly gatewayCallIds: GatewayCallIds;
  /** Each process's lease ids, in the order they are taken, so a seed replays the same streams. */
  readonly leaseIds: (process: SimulatedProcess) => string;
  /** How long each process's lease lasts after a renewal, in virtual ms. */
  readonly leaseDurationMs: number;
}

export type SimulatedProcess = 'node' | 'second';

/** How one recovery pass of a process ended. */
export type RecoveryPassEnd =
  | { readonly process: 'node' | 'second'; readonly report: SweepReport }
  | { readonly process: 'node' | 'second'; readonly error: unknown; readonly processDead: boolean };

/** Another process on the same log: its own repository, RunOperation and sweep handlers. */
export interface SecondProcess {
  run(request: RunOperationRequest): Promise<InvocationSummary>;
  sweep(olderThanMs: number): Promise<SweepReport>;
  /** The second process's own gateway accounting: its repository, so its caches of keys and rate card are its own. */
  readonly gateway: GatewayAccounting;
}

export class LedgerNode {
  private readonly kill = new AbortController();
  private readonly inFlight = new Set<Promise<unknown>>();

  private constructor(
    private readonly app: INestApplication,
    readonly store: FaultyEventStore,
    readonly second: SecondProcess,
    private readonly secondRecovery: InvocationRecovery,
    private readonly secondLease: InstanceLeaseKeeper,
  ) {}

  static async start(options: LedgerNodeOptions): Promise<LedgerNode> {
    // Set once the node exists: recovery's first pass comes due only when the pump turns, after start.
    let self: LedgerNode | undefined;
    const observed = (process: 'node' | 'second', sweep: RecoverySweep): RecoverySweep => observedRecovery(() => self!, process, sweep, options.onRecoveryPass);
    const { app, store } = await startApplication(options, (handler) =>
      new InvocationRecovery(observed('node', (command) => handler.execute(command)), options.clock, options.recovery.node),
    );
    const repository = new AggregateRepository(store, LEDGER_UPCASTERS);
    // The second process's own lease, on its own repository: what it starts, it owns.
    const secondLease = new InstanceLeaseKeeper(repository, options.clock, { durationMs: options.leaseDurationMs, newLeaseId: () => options.leaseIds('second'), instance: 'sim-second' });
    await secondLease.start();
    const runHandler = new RunOperationHandler(
      repository,
      app.get(FeatureRegistry),
      app.get(ProviderRegistry),
      options.clock,
      options.random,
      // Its own process: its runs are its own (a cancellation recorded in the log reaches the node's).
      new RunningInvocations(),
      new KeyedRepeats(
        repository,
        app.get<AnswerStore>(ANSWER_STORE),
        options.clock,
        // The same deployment: the second process shares the first's fingerprint secret.
        app.get<Buffer>(IDEMPOTENCY_SECRET),
        // The app's own, which its log watcher tells when an invocation ends, whichever node ended it.
        app.get(InvocationEndings),
      ),
      // The app's own observation of runs, as the Nest-built handler has it.
      app.get<InvocationInstrumentation>(INVOCATION_INSTRUMENTATION),
      secondLease,
    );
    const sweepHandler = new SweepStaleInvocationsHandler(repository, app.get<SweepCandidates>(SWEEP_CANDIDATES), options.clock);
    // Another instance on the same log recovers too, with its own repository and schedule.
    const secondRecovery = new InvocationRecovery(observed('second', (command) => sweepHandler.execute(command)), options.clock, options.recovery.second);
    self = new LedgerNode(
      app,
      store,
      {
        run: (request) => runHandler.execute(new RunOperationCommand(request)),
        sweep: (olderThanMs) => sweepHandler.execute(new SweepStaleInvocationsCommand(olderThanMs)),
        gateway: new GatewayCalls(repository, options.clock, options.gatewayCallIds, undefined, secondLease),
      },
      secondRecovery,
      secondLease,
    );
    secondRecovery.start();
    return self;
  }

  /**
   * Resolves once neither process's recovery is in a pass nor its lease in a renewal (no timer fires
   * while nobody turns the pump). On a server store a renewal whose timer fired before the pump stood
   * still may still be on its way to a commit: it landed between the live read models' catch-up and
   * the replay's, and the quiet point's comparison saw the log move (`read-models.replay-equals-live`).
   */
  async recoveryIdle(): Promise<void> {
    await Promise.all([
      this.app.get(InvocationRecovery).idle(),
      this.secondRecovery.idle(),
      this.app.get<InstanceLeaseKeeper>(INSTANCE_LEASE).idle(),
      this.secondLease.idle(),
    ]);
  }

  /** The process renews no lease for `ms` (a pause, or a process cut off from its store), then renews at once. */
  pauseLease(process: SimulatedProcess, ms: number): void {
    (process === 'node' ? this.app.get<InstanceLeaseKeeper>(INSTANCE_LEASE) : this.secondLease).pauseFor(ms);
  }

  /** The accounting side the `/anthropic` routes call (GATEWAY_ACCOUNTING): admission and settlement. */
  get gateway(): GatewayAccounting {
    return this.app.get<GatewayAccounting>(GATEWAY_ACCOUNTING);
  }

  /** Rate card and key administration, as the `/v1/gateway/models` and `…/gateway-keys` routes use it. */
  get gatewayAdmin(): GatewayAdmin {
    return this.app.get(GatewayAdmin);
  }

  /** The application's own repository (its caches are the ones its gateway accounting reads). */
  get repository(): AggregateRepository {
    return this.app.get(AggregateRepository);
  }

  get commandBus(): CommandBus {
    return this.app.get(CommandBus);
  }

  get runner(): LiveProjections {
    return this.app.get(LiveProjections);
  }

  get readModels(): SqliteReadModelStore {
    return this.app.get<SqliteReadModelStore>(READ_MODEL_STORE);
  }

  get dead(): boolean {
    return this.store.isDead;
  }

  /** Fires when the process dies: every conversation it runs is given it, so they all stop. */
  get killSignal(): AbortSignal {
    return this.kill.signal;
  }

  /** Runs `work` as a command of this process, so a crash can wait for everything the process was doing. */
  track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    const forget = (): void => {
      this.inFlight.delete(work);
    };
    work.then(forget, forget);
    return work;
  }

  /** Commands of this process that have not finished. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** The process dies now (the store already refuses every call after a crash point). */
  die(): void {
    this.store.die();
    // A dead process schedules nothing more: its recoveries' timers go with it.
    void this.app.get(InvocationRecovery).stop();
    void this.secondRecovery.stop();
    void this.app.get<InstanceLeaseKeeper>(INSTANCE_LEASE).stop();
    void this.secondLease.stop();
    if (!this.kill.signal.aborted) this.kill.abort(new Error('the process died'));
  }

  /** Releases the files (after a crash too): stops the runner, closes the read models and the store. */
  async close(): Promise<void> {
    await this.secondRecovery.stop();
    await this.secondLease.stop();
    await this.app.close();
  }
}

type RecoverySweep = (command: SweepStaleInvocationsCommand) => Promise<SweepReport>;

/** A recovery's sweep, run as a command of its process (so a crash waits for it) and reported when it ends. */
function observedRecovery(node: () => LedgerNode, process: 'node' | 'second', sweep: RecoverySweep, report: (pass: RecoveryPassEnd) => void): RecoverySweep {
  return async (command) => {
    const owner = node();
    try {
      const result = await owner.track(sweep(command));
      report({ process, report: result });
      return result;
    } catch (error) {
      report({ process, error, processDead: owner.dead });
      throw error;
    }
  };
}

/**
 * The real application with the simulation's clock, jitter, projection runner, recovery (made by
 * `recovery` from the application's own sweep handler) and the fault-injecting store.
 */
async function startApplication(
  options: LedgerNodeOptions,
  recovery: (handler: SweepStaleInvocationsHandler) => InvocationRecovery,
): Promise<{ readonly app: INestApplication; readonly store: FaultyEventStore }> {
  let wrapped: FaultyEventStore | undefined;
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.forRoot({ env: options.env, imports: [featureModule(options.features)] })],
  })
    // The gateway's accounting with the simulator's call ids, so a seed replays the same streams.
    .overrideProvider(GatewayCalls)
    .useFactory({
      inject: [AggregateRepository, CLOCK, INSTANCE_LEASE],
      factory: (repository: AggregateRepository, clock: SimulationClock, lease: InstanceLeaseKeeper) => new GatewayCalls(repository, clock, options.gatewayCallIds, undefined, lease),
    })
    // The node's lease, with ids from the simulator so a seed replays the same streams.
    .overrideProvider(INSTANCE_LEASE)
    .useFactory({
      inject: [EVENT_STORE, CLOCK],
      factory: (eventStore: EventStore, clock: SimulationClock) =>
        new InstanceLeaseKeeper(new AggregateRepository(eventStore), clock, { durationMs: options.leaseDurationMs, newLeaseId: () => options.leaseIds('node'), instance: 'sim-node' }),
    })
    .overrideProvider(CLOCK)
    .useValue(options.clock)
    .overrideProvider(RETRY_JITTER)
    .useValue(options.random)
    // The live batch window of the runner waits on wall time; at 0 it flushes every event-loop turn,
    // which keeps the read side on the same schedule in every replay of a seed.
    .overrideProvider(LiveProjections)
    .useFactory({
      inject: [EVENT_STORE, READ_MODEL_STORE],
      factory: (eventStore: EventStore, store: SqliteReadModelStore) => {
        const runnerOptions = { eventStore, store, projections: ALL_PROJECTIONS, liveBatchIntervalMs: 0 };
        return isEmbeddedStore(options.env) ? new ProjectionRunner(runnerOptions) : new ProbedProjectionRunner(runnerOptions, options.probe, wrapped!.goneSignal);
      },
    })
    // The application's own recovery, on the virtual clock, its passes tracked as the process's commands.
    .overrideProvider(InvocationRecovery)
    .useFactory({ inject: [SweepStaleInvocationsHandler], factory: recovery })
    .overrideProvider(EVENT_STORE)
    .useFactory({
      inject: [LEDGER_CONFIG],
      factory: async (config: LedgerConfig) => {
        // Commits at the end of each turn: the simulated processes share one event loop, and commits
        // right after each task would serialise their appends, which two real processes' are not.
        const inner = await openEventStore(config.store, { synchronous: config.sqliteSynchronous, eagerCommitsPerTurn: 0 });
        wrapped = new FaultyEventStore(inner, options.controller, options.probe);
        return wrapped;
      },
    })
    .compile();
  const app = moduleRef.createNestApplication({ logger: options.logs === true ? undefined : false });
  await app.init();
  return { app, store: wrapped! };
}

/** Whether the log is the embedded SQLite store (the default), whose every call the probe sees. */
function isEmbeddedStore(env: Readonly<Record<string, string | undefined>>): boolean {
  const store = env['LEDGER_STORE'];
  return store === undefined || store.startsWith('sqlite:');
}

/**
 * On a server store (PostgreSQL, EventStoreDB) the runner's subscription reads are I/O the probe does
 * not see: a wait for the read models to catch up (a sweep's first step) holds the pump from calling
 * the process idle, so no timer fires and no wave is judged hung while the log is still arriving.
 */
export class ProbedProjectionRunner extends ProjectionRunner {
  constructor(
    options: ProjectionRunnerOptions,
    private readonly probe: ActivityProbe,
    /** The process's death: its runner hears nothing more then, so a wait for it would hold the pump for ever. */
    private readonly gone: AbortSignal,
  ) {
    super(options);
  }

  override async waitFor(position: bigint, options?: WaitOptions): Promise<void> {
    const release = this.probe.hold();
    try {
      await super.waitFor(position, { ...options, signal: options?.signal === undefined ? this.gone : AbortSignal.any([options.signal, this.gone]) });
    } finally {
      release();
    }
  }
}

function featureModule(features: readonly OperationFeature[]): DynamicModule {
  @Module({})
  class SimulatedFeaturesModule {}
  return { module: SimulatedFeaturesModule, imports: [LedgerFeaturesModule.register(...features)] };
}

