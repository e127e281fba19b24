/**
 * The deterministic simulator (issue 8, after TigerBeetle's VOPR): one seed draws a scenario, runs it
 * against the real ledger on a virtual clock with faults injected at random but reproducibly, and
 * checks the invariants after every step. The same seed and options replay the same run.
 *
 * A run: set up the catalog and the accounts; then wave after wave, start the wave's work at its
 * virtual times and turn the event loop until it all finished — through provider faults, slow and
 * throwing tools and judges, cancellations, repeated commands, concurrent sweeps from two processes,
 * new publications, store conflicts and lost acknowledgements, and a crash with a restart on the same
 * log; audit the log after every command; compare the read models with a replay when the node is
 * quiet. Finally let a day pass, sweep, and check that nothing is left in flight and every account
 * adds up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountStreamName } from '../accounts/account.events';
import { AdjustCreditsCommand, ChangeOrganizationSettingsCommand, GrantCreditsCommand } from '../accounts/account-commands';
import { toNewEvent } from '../aggregates/aggregate.repository';
import { PublishOperationCommand, type PublicationRequest } from '../catalog/publish-operation.command';
import type { EventStore, NewEvent } from '../event-store/event-store.port';
import { openEventStore, parseStoreUrl } from '../event-store/open-event-store';
import type { InvocationSummary } from '../invocations/invocation.state';
import { MAX_KEYED_REPEAT_WAIT_MS } from '../invocations/invocation-endings';
import { RunOperationCommand, type RunOperationRequest } from '../invocations/run-operation.command';
import { SweepStaleInvocationsCommand, type SweepReport } from '../invocations/sweep-stale-invocations.command';
import { ActivityProbe, EventLoopPump } from './event-loop-pump';
import { GatewayDriver } from './gateway-driver';
import type { AppendFault, StoreFaultController } from './faulty-event-store';
import { LedgerNode, type RecoveryPassEnd } from './ledger-node';
import { CommittedHead, isPostgresUrl } from './scenario-database';
import { LogAudit, type Violation } from './log-audit';
import { Prng } from './prng';
import { checkReadModels } from './read-model-check';
import { CRASH_BOUNDARIES, planScenario, type RecoveryPlan, type CrashPlan, type InvocationPlan, type RepeatPlan, type ScenarioPlan, type WaveAction, type WavePlan } from './scenario';
import { SimulatedEpisode } from './simulated-episode';
import { simulatedFeatures } from './simulated-features';
import { SimulationClock } from './simulation-clock';
import {
  FINAL_IDLE_MS,
  FINAL_SWEEP_OLDER_THAN_MS,
  MAX_CRASH_DRAIN_TURNS,
  MAX_FINAL_SWEEPS,
  MAX_TURNS_PER_WAVE,
  MAX_WAVE_SPAN_MS,
  SIMULATED_LEASE_DURATION_MS,
  SIMULATION_EPOCH_MS,
} from './simulation.bounds';
import { Tally } from './tally';
import { formatViolation } from './violation-report';

/** Rewrites appends: only a deliberately broken build (a test) passes one. */
export type AppendTamper = (streamName: string, events: readonly NewEvent[]) => readonly NewEvent[];

export interface SimulationOptions {
  readonly seed: number;
  readonly invocations: number;
  /**
   * `LEDGER_STORE` of the log: by default an SQLite file in a fresh temporary directory; an
   * `esdb://…` / `kurrentdb://…` connection string runs the same scenario on EventStoreDB.
   */
  readonly store?: string;
  /** Where the SQLite files (log and read models) go; a fresh temporary directory by default. */
  readonly directory?: string;
  readonly keepDirectory?: boolean;
  /** Prefix of every id, so runs sharing one EventStoreDB do not meet; empty by default. */
  readonly namespace?: string;
  readonly tamper?: AppendTamper;
  /** Print the ledger's own log lines. */
  readonly logs?: boolean;
  /**
   * Arm each wave's crash at the next boundary (of CRASH_BOUNDARIES, before and after the write) not
   * yet hit, instead of the scenario's own draw, until every one has been hit once.
   */
  readonly crashAtEveryBoundary?: boolean;
  /** Each process's recovery instead of the scenario's draw: only a deliberately broken build (a test) turns it off. */
  readonly recovery?: RecoveryPlan;
}

export interface SimulationResult {
  readonly seed: number;
  readonly invocations: number;
  /** The first broken invariant, if any. */
  readonly violation: Violation | undefined;
  /** The violation with its seed, replay command and history, ready to print. */
  readonly report: string | undefined;
  /** What was injected and what the ledger did (counters by name). */
  readonly tally: Tally;
  /** Events of the run in the log. */
  readonly events: number;
  /** SHA-256 of the run's events (stream, type, data) in log order: the same for every replay of a seed. */
  readonly digest: string;
  readonly virtualMs: number;
  readonly waves: number;
  /** Invariant checks made (one per step, plus read-model comparisons). */
  readonly checks: number;
}

export async function runSimulation(options: SimulationOptions): Promise<SimulationResult> {
  return new Simulation(options).run();
}

/** What `act` needs to judge a command's failure. */
interface ActContext {
  /** The invocation the command is about. */
  readonly invocationId?: string;
  /** Called when the command failed because its process died. */
  readonly onProcessGone?: () => void;
  /** An error the command must end with (a key reused for another operation). */
  readonly expectedError?: string;
  /**
   * A keyed repeat, or a keyed first request another request under its key may overtake, sent at this
   * virtual time: it may end still waiting for the key's first request in the log.
   */
  readonly repeatSentAtMs?: number;
  /**
   * The operation the command asked for under its key: when the key's first request in the log is
   * another operation's (a repeat that reused the key got there first), refusing it is right.
   */
  readonly operationId?: string;
  /** Errors the command's own world explains (a key revoked before it was changed, a sweep that settled a call first). */
  readonly explains?: (errorName: string) => boolean;
}

/** Events only a running conversation writes (the sweep writes none of them). */
const CONVERSATION_EVENTS = new Set(['AttemptRecorded', 'InvocationCompleted', 'InvocationFailed']);

/** Errors a command may end with in a faulty world, and why that is fine. */
const EXPLAINED_ERRORS = new Set(['ProcessGoneError', 'AppendAcknowledgementLostError', 'ConcurrencyError']);

class Simulation implements StoreFaultController {
  private readonly plan: ScenarioPlan;
  private readonly clock = new SimulationClock(SIMULATION_EPOCH_MS);
  private readonly probe = new ActivityProbe();
  private readonly pump: EventLoopPump;
  private readonly tally = new Tally();
  private readonly storePrng: Prng;
  private readonly jitter: Prng;
  private readonly episodes = new Map<string, SimulatedEpisode>();
  private readonly episodesById = new Map<string, SimulatedEpisode>();
  private readonly disturbedInvocations = new Set<string>();
  /** Invocation → when its conversation last issued a write of its own (CONVERSATION_EVENTS). */
  private readonly conversationWrites = new Map<string, number>();
  /** Streams whose next append is spared, after an injected conflict: a conflict is injected once. */
  private readonly spared = new Set<string>();
  private readonly directory: string;
  private readonly env: Record<string, string>;
  private auditor: EventStore | undefined;
  /** Each stream's last revision the store committed, as the processes' stores reported it. */
  private readonly committedRevisions = new Map<string, bigint>();
  /** For each gateway call's estimate: its account's last revision committed when the estimate was issued. */
  private readonly accountCommittedAtEstimate = new Map<string, bigint>();
  /** On PostgreSQL, the log's committed head past the read bound, for the quiet points. */
  private committedHead: CommittedHead | undefined;
  private audit!: LogAudit;
  private node: LedgerNode | undefined;
  private nodeReady: Promise<LedgerNode> = Promise.reject(new Error('not started'));
  private restarting: Promise<void> | undefined;
  private faultsOn = false;
  private crash: CrashPlan | undefined;
  private crashSeen = 0;
  /** The event type of the armed crash point, once it fired. */
  private crashedAt: string | undefined;
  /** With `crashAtEveryBoundary`: the boundaries not hit yet, in order. */
  private readonly boundariesLeft: CrashPlan[] = [];
  private secondWriterGrants = 0;
  private violation: Violation | undefined;
  private checks = 0;
  private waves = 0;
  /** Gateway calls' invocation ids drawn so far (GATEWAY_CALL_IDS: in call order, so a seed replays them). */
  private gatewayCallIds = 0;
  /** Leases taken so far, by either process (in order, so a seed replays the same lease streams). */
  private leaseIds = 0;
  private readonly gateway: GatewayDriver;
  /** The ledger's retry jitter (RETRY_JITTER): the seeded stream, so a seed replays the same waits. */
  private readonly seededRandom = (): number => this.jitter.next();

  constructor(private readonly options: SimulationOptions) {
    const namespace = options.namespace ?? '';
    this.plan = planScenario(options.seed, options.invocations, namespace);
    const root = new Prng(options.seed, 'run');
    const embedded = options.store === undefined || options.store.startsWith('sqlite:');
    const atHead = async (): Promise<boolean> => this.node === undefined || (await this.node.store.subscriptionsAtHead());
    this.pump = new EventLoopPump(this.clock, this.probe, root.fork('store-latency'), !embedded, embedded ? undefined : atHead);
    this.storePrng = root.fork('store-faults');
    this.jitter = root.fork('retry-jitter');
    const operationStyle = new Map(this.plan.operations.map((operation) => [operation.id, operation.style]));
    for (const wave of this.plan.waves) {
      for (const action of wave.actions) {
        if (action.kind !== 'invoke') continue;
        const { tag, invocationId, operationId } = action.plan;
        const episode = new SimulatedEpisode(tag, operationStyle.get(operationId)!, root.fork(`episode-${tag}`), this.clock, this.tally);
        this.episodes.set(tag, episode);
        this.episodesById.set(invocationId, episode);
      }
    }
    this.nodeReady.catch(() => undefined);
    if (options.crashAtEveryBoundary === true) {
      for (const eventType of CRASH_BOUNDARIES) {
        for (const when of ['before', 'after'] as const) this.boundariesLeft.push({ eventType, when, occurrence: 1 });
      }
    }
    const simulation = this;
    this.gateway = new GatewayDriver(
      {
        clock: this.clock,
        tally: this.tally,
        get audit() {
          return simulation.audit;
        },
        act: (label, work, context) => this.act(label, work, context),
        crash: (node) => this.crashNode(node),
        fail: (violation) => this.fail(violation),
      },
      this.plan,
    );
    this.directory = options.directory ?? mkdtempSync(join(tmpdir(), 'llm-ledger-sim-'));
    const store = options.store ?? `sqlite:${join(this.directory, 'ledger.sqlite')}`;
    this.env = {
      LEDGER_STORE: store,
      LEDGER_READ_STORE: join(this.directory, 'ledger.read.sqlite'),
      // Named, so a run on EventStoreDB keeps its answers in its own directory too, not in ./var.
      LEDGER_ANSWER_STORE: join(this.directory, 'ledger.answers.sqlite'),
      // Fixed per seed, so request fingerprints, and with them the log's digest, replay exactly.
      LEDGER_IDEMPOTENCY_SECRET: `simulation-fingerprint-secret-seed-${this.options.seed}`,
      // Its crashes are process deaths on an intact file, which NORMAL already survives: an fsync per
      // commit would only cost time (the SIGKILL tests and the store's own tests cover FULL).
      LEDGER_SQLITE_SYNCHRONOUS: 'NORMAL',
    };
  }

  async run(): Promise<SimulationResult> {
    try {
      this.auditor = await openEventStore(parseStoreUrl(this.env.LEDGER_STORE!));
      if (isPostgresUrl(this.env.LEDGER_STORE!)) this.committedHead = await CommittedHead.open(this.env.LEDGER_STORE!);
      this.audit = new LogAudit(
        this.auditor,
        {
          episodeOf: (invocationId) => this.episodesById.get(invocationId),
          disturbed: (invocationId) => this.disturbedInvocations.has(invocationId),
          note: (name) => this.tally.add(name),
          accountCommittedAtEstimate: (invocationId) => this.accountCommittedAtEstimate.get(invocationId),
        },
        {
          namespace: this.options.namespace ?? '',
          positionsInCommitOrder: !isPostgresUrl(this.env.LEDGER_STORE!),
          gatewayOnlyOrganizations: new Set(this.plan.gateway.organizations.map((organization) => organization.id)),
        },
      );
      this.node = await this.startNode();
      this.nodeReady = Promise.resolve(this.node);
      await this.setup();
      for (const wave of this.plan.waves) {
        if (this.violation !== undefined) break;
        await this.runWave(wave);
      }
      if (this.violation === undefined) await this.finish();
      const report = this.violation === undefined
        ? undefined
        : await formatViolation(this.violation, { seed: this.options.seed, invocations: this.options.invocations, flags: this.replayFlags(), store: this.auditor });
      return {
        seed: this.options.seed,
        invocations: this.options.invocations,
        violation: this.violation,
        report,
        tally: this.tally,
        events: this.audit.events,
        digest: this.audit.digest(),
        virtualMs: this.clock.now() - SIMULATION_EPOCH_MS,
        waves: this.waves,
        checks: this.checks,
      };
    } finally {
      await this.shutDown();
    }
  }

  // --- StoreFaultController: every draw is made in append order, so it replays with the seed.

  crashAt(streamName: string, events: readonly NewEvent[]): 'before' | 'after' | undefined {
    const crash = this.crash;
    if (crash === undefined || !this.owns(streamName) || !events.some((event) => event.type === crash.eventType)) return undefined;
    this.crashSeen += 1;
    if (this.crashSeen < crash.occurrence) return undefined;
    this.crash = undefined;
    this.crashedAt = crash.eventType;
    return crash.when;
  }

  onCrash(_streamName: string, _events: readonly NewEvent[], when: 'before' | 'after'): void {
    this.tally.add(`crash.${when}.${this.crashedAt ?? 'unknown'}`);
    const next = this.boundariesLeft[0];
    if (next !== undefined && next.eventType === this.crashedAt && next.when === when) this.boundariesLeft.shift();
    this.beginRestart();
  }

  faultFor(streamName: string, events: readonly NewEvent[]): AppendFault {
    if (!this.faultsOn || !this.owns(streamName)) return 'none';
    if (this.spared.delete(streamName)) return 'none';
    const { conflictPerMille, secondWriterPerMille, lostAckPerMille } = this.plan.storeFaults;
    const draw = this.storePrng.int(0, 999);
    if (draw < conflictPerMille + secondWriterPerMille) {
      this.spared.add(streamName);
      const secondWriter = draw >= conflictPerMille && streamName.startsWith('account-');
      this.tally.add(secondWriter ? 'store.second-writer' : 'store.conflict');
      return secondWriter ? 'second-writer' : 'conflict';
    }
    if (draw < conflictPerMille + secondWriterPerMille + lostAckPerMille) {
      this.tally.add('store.lost-ack');
      const invocationId = streamName.startsWith('invocation-') ? streamName.slice('invocation-'.length) : events[0]?.metadata.correlationId;
      if (typeof invocationId === 'string') this.disturbedInvocations.add(invocationId);
      return 'lost-ack';
    }
    return 'none';
  }

  secondWriterEvent(streamName: string): NewEvent | undefined {
    if (!streamName.startsWith('account-')) return undefined;
    const n = ++this.secondWriterGrants;
    return toNewEvent({
      type: 'CreditsGranted',
      data: { credits: n, reason: 'granted by another process', idempotencyKey: `${this.options.namespace ?? ''}second-writer-${n}`, grantedAt: this.iso() },
    });
  }

  issued(streamName: string, events: readonly NewEvent[]): void {
    // What the account had certainly committed when a gateway call's estimate went out: the refusal decided after it saw at least that.
    const estimate = events.find((event) => event.type === 'InvocationEstimated')?.data as { invocationId?: string; organizationId?: string; gateway?: unknown } | undefined;
    if (estimate?.gateway !== undefined && estimate.invocationId !== undefined && estimate.organizationId !== undefined) {
      const revision = this.committedRevisions.get(accountStreamName(estimate.organizationId));
      if (revision !== undefined) this.accountCommittedAtEstimate.set(estimate.invocationId, revision);
    }
    // The conversation's own writes: an attempt, or how it ended. When each was issued tells whether
    // the conversation was still running at some instant.
    if (!streamName.startsWith('invocation-') || !events.some((event) => CONVERSATION_EVENTS.has(event.type))) return;
    this.conversationWrites.set(streamName.slice('invocation-'.length), this.clock.now());
  }

  committed(parts: readonly { readonly streamName: string; readonly revision: bigint }[]): void {
    for (const { streamName, revision } of parts) {
      if (revision > (this.committedRevisions.get(streamName) ?? -1n)) this.committedRevisions.set(streamName, revision);
    }
  }

  observe(what: 'genuine-conflict' | 'overlapping-append'): void {
    this.tally.add(`observed.${what}`);
  }

  tamper(streamName: string, events: readonly NewEvent[]): readonly NewEvent[] {
    return this.options.tamper?.(streamName, events) ?? events;
  }

  // --- The run.

  /** The CLI options that shaped this run (the store, a namespace or a tamper cannot be given there). */
  private replayFlags(): string[] {
    return [
      ...(this.options.crashAtEveryBoundary === true ? ['--every-boundary'] : []),
    ];
  }

  private owns(streamName: string): boolean {
    const namespace = this.options.namespace ?? '';
    return streamName.startsWith(namespace, streamName.indexOf('-') + 1);
  }

  private iso(): string {
    return new Date(this.clock.now()).toISOString();
  }

  private startNode(): Promise<LedgerNode> {
    return LedgerNode.start({
      env: this.env,
      clock: this.clock,
      random: this.seededRandom,
      features: simulatedFeatures(this.plan.operations, (tag) => this.episode(tag), this.clock),
      controller: this,
      probe: this.probe,
      logs: this.options.logs,
      recovery: this.options.recovery ?? this.plan.recovery,
      onRecoveryPass: (pass) => this.recoveryPassEnded(pass),
      gatewayCallIds: () => `${this.options.namespace ?? ''}gw-call-${++this.gatewayCallIds}`,
      leaseIds: (process) => `${this.options.namespace ?? ''}${process}-lease-${++this.leaseIds}`,
      leaseDurationMs: SIMULATED_LEASE_DURATION_MS,
    });
  }

  /**
   * A recovery pass of either process ended: count what it finished; an error is fine only when the
   * world explains it (its process died, an injected conflict or lost acknowledgement), as for commands.
   */
  private recoveryPassEnded(pass: RecoveryPassEnd): void {
    if ('report' in pass) {
      this.tally.add(`recovery.${pass.process}.passes`);
      for (const swept of pass.report.settled) this.tally.add(`recovery.settled.transition-${swept.transition}`);
      this.tally.add('recovery.released-holds', pass.report.releasedHolds.length);
      return;
    }
    const name = pass.error instanceof Error ? pass.error.name : typeof pass.error;
    this.tally.add(`recovery.error.${name}`);
    if (pass.processDead || EXPLAINED_ERRORS.has(name)) return;
    this.fail({
      invariant: 'recovery.no-unexplained-error',
      detail: `a recovery pass of the ${pass.process === 'node' ? 'node' : 'second process'} failed with ${describe(pass.error)} although no injected fault explains it`,
      streams: [],
      invocations: [],
    });
  }

  private episode(tag: string): SimulatedEpisode {
    const episode = this.episodes.get(tag);
    if (episode === undefined) throw new Error(`no episode ${tag}`);
    return episode;
  }

  /** The node to send a command to; while a crashed node restarts, the next one. */
  private liveNode(): Promise<LedgerNode> {
    return this.node !== undefined && !this.node.dead ? Promise.resolve(this.node) : this.nodeReady;
  }

  /** The catalog and the accounts, before any fault is switched on. */
  private async setup(): Promise<void> {
    for (const operation of this.plan.operations) {
      if (operation.initial !== undefined) await this.publish(operation.id, operation.initial);
    }
    for (const organization of this.plan.organizations) {
      await this.act('settings', (node) => node.commandBus.execute(new ChangeOrganizationSettingsCommand(organization.id, { maxRunning: organization.maxRunning })));
      if (organization.initialCredits > 0) {
        await this.act('grant', (node) => node.commandBus.execute(new GrantCreditsCommand(organization.id, organization.initialCredits, 'initial credits', `${organization.id}-initial`)));
      }
    }
    await this.gateway.setup();
    await this.quiescentCheck();
  }

  private async runWave(wave: WavePlan): Promise<void> {
    this.waves += 1;
    this.faultsOn = true;
    this.crash = this.nextBoundary(wave) ?? wave.crash;
    this.crashSeen = 0;
    const startedAtMs = this.clock.now();
    const pending = new Map<number, string>();
    let launched = 0;
    const launch = (atMs: number, label: string, work: () => Promise<unknown>): void => {
      const id = launched++;
      pending.set(id, label);
      this.clock.setTimer(atMs, () => {
        work()
          .catch((error: unknown) => this.fail({ invariant: 'simulator.error', detail: `${label}: ${describe(error)}`, streams: [], invocations: [] }))
          .finally(() => pending.delete(id));
      });
    };
    for (const action of wave.actions) this.schedule(action, launch);

    const ending = await this.pump.runUntil({
      done: () => (pending.size === 0 && this.restarting === undefined) || this.violation !== undefined,
      maxTurns: MAX_TURNS_PER_WAVE,
      deadlineMs: startedAtMs + MAX_WAVE_SPAN_MS,
    });
    this.faultsOn = false;
    this.crash = undefined;
    if (ending !== 'done') {
      this.fail({
        invariant: 'liveness.work-finishes',
        detail: `wave ${wave.index} ${ending} with ${pending.size} action(s) unfinished: ${[...pending.values()].slice(0, 10).join(', ')}`,
        streams: [],
        invocations: [],
      });
    }
    if (this.violation !== undefined) return;
    await this.quiescentCheck();
    if (wave.restartAfter && this.violation === undefined) {
      await this.cleanRestart();
      await this.quiescentCheck();
    }
  }

  /**
   * With `crashAtEveryBoundary`, the first boundary not hit yet that this wave can reach: a catalog
   * or grant boundary waits for a wave that publishes or grants.
   */
  private nextBoundary(wave: WavePlan): CrashPlan | undefined {
    const reachable = (crash: CrashPlan): boolean =>
      crash.eventType === 'OperationPublished'
        ? wave.actions.some((action) => action.kind === 'publish')
        : crash.eventType === 'CreditsGranted'
          ? wave.actions.some((action) => action.kind === 'grant')
          : true;
    const index = this.boundariesLeft.findIndex(reachable);
    if (index < 0) return undefined;
    const [crash] = this.boundariesLeft.splice(index, 1);
    this.boundariesLeft.unshift(crash!);
    return crash;
  }

  private schedule(action: WaveAction, launch: (atMs: number, label: string, work: () => Promise<unknown>) => void): void {
    switch (action.kind) {
      case 'invoke': {
        const { plan } = action;
        launch(action.atMs, `invoke ${plan.tag}`, () => this.invoke(plan));
        plan.repeats.forEach((repeat, index) => launch(action.atMs + repeat.afterMs, `repeat ${index} of ${plan.tag}`, () => this.repeat(plan, repeat)));
        return;
      }
      case 'publish':
        launch(action.atMs, `publish ${action.operationId}`, () => {
          this.tally.add('publication.mid-flight');
          return this.publish(action.operationId, action.terms);
        });
        return;
      case 'grant':
      case 'adjust': {
        const send = (repeat: boolean) => (): Promise<unknown> => {
          if (repeat) this.tally.add(`duplicate.${action.kind}`);
          return this.act(action.kind, (node) =>
            node.commandBus.execute(
              action.kind === 'grant'
                ? new GrantCreditsCommand(action.organizationId, action.credits, 'simulated grant', action.idempotencyKey)
                : new AdjustCreditsCommand(action.organizationId, action.credits, 'simulated adjustment', action.idempotencyKey),
            ),
          );
        };
        launch(action.atMs, `${action.kind} ${action.idempotencyKey}`, send(false));
        if (action.repeatAfterMs !== undefined) launch(action.atMs + action.repeatAfterMs, `repeat ${action.idempotencyKey}`, send(true));
        return;
      }
      case 'settings':
        launch(action.atMs, `settings ${action.organizationId}`, () => {
          this.tally.add(action.aiEnabled === false ? 'settings.ai-off' : 'settings.changed');
          const settings = { ...(action.aiEnabled === undefined ? {} : { aiEnabled: action.aiEnabled }), ...(action.maxRunning === undefined ? {} : { maxRunning: action.maxRunning }) };
          return this.act('settings', (node) => node.commandBus.execute(new ChangeOrganizationSettingsCommand(action.organizationId, settings)));
        });
        return;
      case 'sweep':
        for (let copy = 0; copy < action.copies; copy++) {
          // A second copy runs in the other process: two processes sweep at the same instant.
          const bySecondProcess = copy === 0 ? action.bySecondProcess : !action.bySecondProcess;
          launch(action.atMs, `sweep ${action.olderThanMs}`, () => {
            this.tally.add(bySecondProcess ? 'sweep.second-process' : 'sweep.node');
            if (action.copies > 1) this.tally.add('sweep.concurrent');
            return this.sweep(action.olderThanMs, bySecondProcess);
          });
        }
        return;
      case 'pause-lease':
        launch(action.atMs, `pause the ${action.process}'s lease`, async () => {
          this.tally.add(`lease.paused.${action.process}.${action.durationMs > SIMULATED_LEASE_DURATION_MS ? 'past-its-lease' : 'within-its-lease'}`);
          if (this.node !== undefined && !this.node.dead) this.node.pauseLease(action.process, action.durationMs);
        });
        return;
      default:
        this.gateway.schedule(action, launch);
    }
  }

  private async invoke(plan: InvocationPlan): Promise<void> {
    const cancel = new AbortController();
    const stopCancel =
      plan.cancelAfterMs === undefined
        ? undefined
        : this.clock.setTimer(plan.cancelAfterMs, () => {
            this.tally.add('invocation.cancelled-by-caller');
            cancel.abort(new Error('the caller cancelled'));
          });
    if (plan.bySecondProcess) this.tally.add('invocation.by-second-process');
    let crashed = false;
    await this.act(
      `invoke ${plan.tag}`,
      async (node) => {
        const summary = await this.runOperation(node, plan.bySecondProcess, {
          operationId: plan.operationId,
          organizationId: plan.organizationId,
          input: { tag: plan.tag },
          idempotencyKey: plan.idempotencyKey,
          signal: AbortSignal.any([cancel.signal, node.killSignal]),
        });
        this.tally.add(`result.${summary.state}${summary.outcome === undefined ? '' : `.${summary.outcome}`}${summary.refusalReason === undefined ? '' : `.${summary.refusalReason}`}`);
        return summary;
      },
      {
        invocationId: plan.invocationId,
        operationId: plan.operationId,
        // A planned repeat of its key may reach the log first (on a store of another process, one sent
        // at the same instant often does): this request is then the repeat, and waits for that one.
        ...(plan.repeats.length === 0 ? {} : { repeatSentAtMs: this.clock.now() }),
        onProcessGone: () => {
          crashed = true;
        },
      },
    );
    stopCancel?.();
    // A client whose request died with the process may send it again, with the same key.
    if (crashed && new Prng(this.options.seed, `client-retry-${plan.tag}`).chance(50)) {
      this.tally.add('duplicate.client-retry-after-crash');
      await this.act(`retry ${plan.tag}`, (node) => this.runOperation(node, false, { operationId: plan.operationId, organizationId: plan.organizationId, input: { tag: plan.tag }, idempotencyKey: plan.idempotencyKey }), {
        invocationId: plan.invocationId,
        operationId: plan.operationId,
        // The crashed process no longer runs it: the retry may wait out its bound until a sweep settles it.
        repeatSentAtMs: this.clock.now(),
      });
    }
  }

  private async repeat(plan: InvocationPlan, repeat: RepeatPlan): Promise<void> {
    const operationId = repeat.otherOperationId ?? plan.operationId;
    this.tally.add(repeat.otherOperationId !== undefined ? 'duplicate.key-for-another-operation' : repeat.bySecondProcess ? 'duplicate.by-second-process' : 'duplicate.same-process');
    await this.act(
      `repeat ${plan.tag}`,
      (node) => this.runOperation(node, repeat.bySecondProcess, { operationId, organizationId: plan.organizationId, input: { tag: plan.tag }, idempotencyKey: plan.idempotencyKey, signal: node.killSignal }),
      { invocationId: plan.invocationId, operationId, repeatSentAtMs: this.clock.now(), ...(repeat.otherOperationId === undefined ? {} : { expectedError: 'IdempotencyKeyReusedError' }) },
    );
  }

  private runOperation(node: LedgerNode, bySecondProcess: boolean, request: RunOperationRequest): Promise<InvocationSummary> {
    return bySecondProcess ? node.second.run(request) : node.commandBus.execute(new RunOperationCommand(request));
  }

  private publish(operationId: string, terms: PublicationRequest): Promise<unknown> {
    return this.act(`publish ${operationId}`, (node) => node.commandBus.execute(new PublishOperationCommand(operationId, terms)));
  }

  private sweep(olderThanMs: number, bySecondProcess: boolean): Promise<SweepReport | undefined> {
    return this.act(`sweep ${olderThanMs}`, async (node) => {
      const report: SweepReport = bySecondProcess ? await node.second.sweep(olderThanMs) : await node.commandBus.execute(new SweepStaleInvocationsCommand(olderThanMs));
      for (const swept of report.settled) this.tally.add(`sweep.settled.transition-${swept.transition}`);
      this.tally.add('sweep.released-holds', report.releasedHolds.length);
      return report;
    });
  }

  /**
   * Sends one command to the live node and audits the log once it is done. An error is fine when the
   * world explains it (the process died, an acknowledgement was lost, a sweep got there first);
   * any other escaping error is a violation.
   */
  private async act<T>(label: string, work: (node: LedgerNode) => Promise<T>, contextOf: ActContext | (() => ActContext) = {}): Promise<T | undefined> {
    const node = await this.liveNode();
    let outcome: { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };
    try {
      outcome = { ok: true, value: await node.track(Promise.resolve().then(() => work(node))) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    await this.step();
    if (outcome.ok) {
      if (isSummary(outcome.value)) this.failIf(await this.audit.checkHandedResult(outcome.value));
      return outcome.value;
    }
    // Read once the work ended: a gateway call learns its invocation id on the way.
    const context = typeof contextOf === 'function' ? contextOf() : contextOf;
    const { invocationId, onProcessGone, expectedError, repeatSentAtMs, operationId } = context;
    const { error } = outcome;
    const name = error instanceof Error ? error.name : typeof error;
    this.tally.add(`error.${name}`);
    if (node.dead) onProcessGone?.();
    if (name === 'IllegalTransitionError' && invocationId !== undefined) {
      // What refused the write (a sweep's or recovery's settlement) may not have reached the fold yet on a server store.
      this.failIf(await this.audit.foldThrough([`invocation-${invocationId}`]));
      if (!node.dead) this.checkNotCutShort(invocationId, label);
    }
    const explained =
      node.dead ||
      EXPLAINED_ERRORS.has(name) ||
      name === expectedError ||
      context.explains?.(name) === true ||
      (name === 'IdempotencyKeyReusedError' && invocationId !== undefined && operationId !== undefined && this.keyFirstUsedByAnother(invocationId, operationId)) ||
      (name === 'KeyedRequestInProgressError' && invocationId !== undefined && repeatSentAtMs !== undefined && this.firstStillRan(invocationId, repeatSentAtMs)) ||
      (name === 'IllegalTransitionError' && invocationId !== undefined && (this.audit.settledByStaleCloser(invocationId) || this.disturbedInvocations.has(invocationId)));
    if (!explained) {
      this.fail({
        invariant: 'command.no-unexplained-error',
        detail: `${label} failed with ${describe(error)} although no injected fault explains it`,
        streams: invocationId === undefined ? [] : [`invocation-${invocationId}`],
        invocations: invocationId === undefined ? [] : [invocationId],
      });
    }
    return undefined;
  }

  /** The key's first request, as the log holds it, asked for another operation than `operationId`. */
  private keyFirstUsedByAnother(invocationId: string, operationId: string): boolean {
    const first = this.audit.invocations.get(invocationId)?.operationId;
    return first !== undefined && first !== '' && first !== operationId;
  }

  /**
   * A keyed repeat may say its first request still runs only if that request had not settled for the
   * whole wait (MAX_KEYED_REPEAT_WAIT_MS from when the repeat was sent, at the least): a first that
   * settled within it must have woken the repeat with its result.
   */
  private firstStillRan(invocationId: string, repeatSentAtMs: number): boolean {
    const settlement = this.audit.invocations.get(invocationId)?.settlement;
    return settlement === undefined || settlement.settledAtMs >= repeatSentAtMs + MAX_KEYED_REPEAT_WAIT_MS;
  }

  /**
   * A live run was refused a write because a sweep had settled its invocation. For a dispatched one
   * (transition 14) the README promises the sweep never cuts a live conversation short: so the
   * conversation must not have issued a write of its own (an attempt, its result) after the instant
   * the sweep settled it — that would mean it was still running then. Unless a lease owned it and the
   * settlement says why (the audit checked it, lease-audit.ts): its instance counted as stopped once
   * its lease lapsed (a pause past it), or the run went on past its own deadline (a stalled relay).
   */
  private checkNotCutShort(invocationId: string, label: string): void {
    const invocation = this.audit.invocations.get(invocationId);
    const settlement = invocation?.settlement;
    const lastWriteMs = this.conversationWrites.get(invocationId);
    if (settlement?.ground !== undefined) {
      this.tally.add(`recovery.refused-a-late-write.${settlement.ground}`);
      return;
    }
    if (settlement?.transition !== 14 || lastWriteMs === undefined || invocation?.publication == null) return;
    this.tally.add('checked.sweep-against-live-conversation');
    if (lastWriteMs > settlement.settledAtMs) {
      const startedAtMs = this.episodesById.get(invocationId)?.conversationStartedAtMs;
      this.fail({
        invariant: 'sweep.never-cuts-a-live-conversation',
        detail:
          `${label}: a sweep settled ${invocationId} as stale dispatched (transition 14) at ${new Date(settlement.settledAtMs).toISOString()}, ` +
          `but its conversation was still running: it issued a write of its own ${lastWriteMs - settlement.settledAtMs} ms later ` +
          `(totalTimeMs ${invocation.publication.limits.totalTimeMs}; the conversation's first request went out at ` +
          `${startedAtMs === undefined ? 'no time' : new Date(startedAtMs).toISOString()})`,
        streams: [invocation.stream],
        invocations: [invocationId],
      });
    }
  }

  /** One step: audit what the log gained. */
  private async step(): Promise<void> {
    this.checks += 1;
    this.failIf(await this.audit.catchUp());
  }

  /**
   * At a quiet point: audits what the log gained, and on PostgreSQL everything the run committed, however
   * long a transaction outside the run holds readers of `$all` back. Returns that committed head.
   */
  private async foldCommitted(): Promise<bigint | undefined> {
    await this.step();
    const head = await this.committedHead?.position();
    if (head !== undefined) this.failIf(await this.audit.foldPast(head));
    return head;
  }

  /** Quiet node: audit, then compare the live read models with a replay of the whole log. */
  private async quiescentCheck(): Promise<void> {
    // A recovery pass or a lease renewal may still be writing; no new one starts while the pump stands still.
    await this.node?.recoveryIdle();
    const head = await this.foldCommitted();
    this.failIf(await this.audit.checkDeferred());
    if (this.violation !== undefined || this.node === undefined) return;
    this.checks += 1;
    this.failIf(await checkReadModels(this.node, this.audit, head));
  }

  /** A crash the scenario asks for at a moment rather than at an append (a gateway call mid-answer). */
  private crashNode(node: LedgerNode): void {
    if (node !== this.node || node.dead || this.restarting !== undefined || this.violation !== undefined) {
      this.tally.add('gateway.crash-mid-call-skipped');
      return;
    }
    this.tally.add('crash.mid-gateway-call');
    this.beginRestart();
  }

  private beginRestart(): void {
    const dead = this.node;
    if (dead === undefined) return;
    this.node = undefined;
    let ready!: (node: LedgerNode) => void;
    this.nodeReady = new Promise<LedgerNode>((resolve) => (ready = resolve));
    this.restarting = (async () => {
      dead.die();
      // Everything the dead process was doing fails now; wait for it (the wave's pump turns the loop).
      for (let turn = 0; dead.pending > 0; turn++) {
        if (turn >= MAX_CRASH_DRAIN_TURNS) throw new Error(`the dead process still had ${dead.pending} command(s) running after ${turn} event-loop turns`);
        await new Promise((resolve) => setImmediate(resolve));
      }
      const resume = this.probe.hold();
      try {
        await dead.close();
        this.node = await this.startNode();
        this.tally.add('restart.after-crash');
      } finally {
        resume();
      }
      await this.step();
      ready(this.node);
    })()
      .catch((error: unknown) => this.fail({ invariant: 'simulator.restart', detail: describe(error), streams: [], invocations: [] }))
      .finally(() => {
        this.restarting = undefined;
      });
  }

  private async cleanRestart(): Promise<void> {
    const node = this.node!;
    const resume = this.probe.hold();
    try {
      await node.close();
      this.node = await this.startNode();
      this.nodeReady = Promise.resolve(this.node);
      this.tally.add('restart.clean');
    } finally {
      resume();
    }
  }

  /**
   * Later, with no fault left and no command sent: both processes' recovery alone must have settled
   * everything (no operator ran a sweep). Then a final sweep from both must find nothing, and the
   * end-of-run invariants hold.
   */
  private async finish(): Promise<void> {
    const ending = await this.pump.sleep(FINAL_IDLE_MS, MAX_TURNS_PER_WAVE);
    if (ending !== 'done') this.fail({ invariant: 'liveness.final-idle', detail: `the final idle ${ending}`, streams: [], invocations: [] });
    await this.node?.recoveryIdle();
    await this.foldCommitted();
    const left = this.violation === undefined ? this.audit.finalChecks() : undefined;
    if (left !== undefined) {
      this.fail({ ...left, invariant: 'recovery.leaves-nothing-in-flight', detail: `after ${FINAL_IDLE_MS} ms of recovery alone, no sweep run: ${left.detail}` });
    }
    for (let round = 0; round < MAX_FINAL_SWEEPS && this.violation === undefined; round++) {
      this.tally.add('sweep.final');
      const [local, second] = await Promise.all([this.sweep(FINAL_SWEEP_OLDER_THAN_MS, false), this.sweep(FINAL_SWEEP_OLDER_THAN_MS, true)]);
      const swept = [local, second].flatMap((report) => (report === undefined ? [] : [...report.settled.map((s) => s.invocationId), ...report.releasedHolds.map((r) => r.invocationId)]));
      if (swept.length > 0) {
        this.fail({ invariant: 'recovery.leaves-nothing-to-sweep', detail: `the final sweep still settled ${swept.length} leftover(s) recovery had not`, streams: swept.map((id) => `invocation-${id}`), invocations: swept });
      }
      if ([local, second].every((report) => report !== undefined)) break;
    }
    await this.foldCommitted();
    if (this.violation === undefined) this.failIf(this.audit.finalChecks());
    if (this.violation === undefined) await this.quiescentCheck();
    this.tally.add('observed.hold-placed-after-settlement', this.audit.holdsAfterSettlement);
  }

  private failIf(violation: Violation | undefined): void {
    if (violation !== undefined) this.fail(violation);
  }

  private fail(violation: Violation): void {
    if (this.violation !== undefined) return;
    this.violation = violation;
    // Stop the world: the node dies, so whatever it was doing ends at once.
    this.node?.die();
  }

  private async shutDown(): Promise<void> {
    const node = this.node;
    this.node = undefined;
    if (node !== undefined) {
      node.die();
      // Let the dead node's commands fail before its files close (bounded: they fail at their next call).
      await this.pump.runUntil({ done: () => node.pending === 0, maxTurns: 100_000, deadlineMs: this.clock.now() + MAX_WAVE_SPAN_MS });
      await node.close().catch(() => undefined);
    }
    await this.restarting;
    await this.auditor?.close();
    await this.committedHead?.close();
    if (this.options.directory === undefined && this.options.keepDirectory !== true) rmSync(this.directory, { recursive: true, force: true });
  }
}

function isSummary(value: unknown): value is InvocationSummary {
  return typeof value === 'object' && value !== null && 'invocationId' in value && 'state' in value && 'charge' in value;
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
