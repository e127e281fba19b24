/**
 * A scenario, drawn from a seed before anything runs: the organizations and operations, and waves of
 * work started at chosen virtual times — invocations (some cancelled, some repeated with their
 * idempotency key, some run by a second process), grants and adjustments (some repeated), settings
 * changes, new publications while requests are in flight, sweeps (some concurrent, some from the
 * second process) — with at most one crash per wave at a boundary between lifecycle transitions.
 * What the models, tools and judges do is drawn later, call by call (simulated-episode.ts).
 */
import type { PublicationRequest } from '../catalog/publish-operation.command';
import { invocationIdFor } from '../invocations/invocation-ids';
import {
  DEFAULT_RECOVERY_INTERVAL_MS,
  DEFAULT_RECOVERY_STALE_AFTER_MS,
  MIN_RECOVERY_STALE_AFTER_MS,
  type RecoverySettings,
} from '../domain/recovery.settings';
import { planGateway, planGatewayWave, type GatewayAction, type GatewayPlan } from './gateway-scenario';
import { Prng } from './prng';
import {
  MAX_OPERATIONS,
  MAX_ORGANIZATIONS,
  MAX_SCENARIO_INVOCATIONS,
  MAX_WAVE_INVOCATIONS,
  MAX_WAVES,
  MIN_OPERATIONS,
  MIN_ORGANIZATIONS,
  MIN_WAVE_INVOCATIONS,
  LEASE_PAUSE_WAVE_PERCENT,
  SIMULATED_LEASE_DURATION_MS,
  WAVE_GRID_MS,
  WAVE_SPREAD_MS,
} from './simulation.bounds';

/** How an operation's conversation ends: through the `submit_answer` tool, or with plain text. */
export type AnswerStyle = 'answer-tool' | 'text-answer';

export interface OrganizationPlan {
  readonly id: string;
  /** Credits granted at setup; 0 for none (the account then exists through its settings alone). */
  readonly initialCredits: number;
  readonly maxRunning: number;
}

export interface OperationPlan {
  readonly id: string;
  readonly style: AnswerStyle;
  /** Publication at setup; undefined for an operation registered but never published (`unknown_operation`). */
  readonly initial: PublicationRequest | undefined;
}

export interface InvocationPlan {
  /** Names the episode (model, tools, judge) the conversation plays. */
  readonly tag: string;
  readonly idempotencyKey: string;
  readonly invocationId: string;
  readonly organizationId: string;
  readonly operationId: string;
  /** Run by the second process's RunOperation handler instead of the node's command bus. */
  readonly bySecondProcess: boolean;
  /** When the caller cancels, in ms after it started; undefined when it never does. */
  readonly cancelAfterMs: number | undefined;
  /** The same request repeated: later, by either process, and sometimes naming another operation. */
  readonly repeats: readonly RepeatPlan[];
}

export interface RepeatPlan {
  readonly afterMs: number;
  readonly bySecondProcess: boolean;
  /** Set when the repeat reuses the key for a different operation (it must be refused). */
  readonly otherOperationId: string | undefined;
}

export type WaveAction =
  | { readonly kind: 'invoke'; readonly atMs: number; readonly plan: InvocationPlan }
  | { readonly kind: 'publish'; readonly atMs: number; readonly operationId: string; readonly terms: PublicationRequest }
  | {
      readonly kind: 'grant' | 'adjust';
      readonly atMs: number;
      readonly organizationId: string;
      readonly credits: number;
      readonly idempotencyKey: string;
      /** Sent again this long after the first (the same key), or undefined. */
      readonly repeatAfterMs: number | undefined;
    }
  | {
      readonly kind: 'settings';
      readonly atMs: number;
      readonly organizationId: string;
      readonly aiEnabled?: boolean;
      readonly maxRunning?: number;
    }
  /** One process renews no lease for `durationMs` (a pause, or a process cut off from its store). */
  | { readonly kind: 'pause-lease'; readonly atMs: number; readonly process: 'node' | 'second'; readonly durationMs: number }
  | {
      readonly kind: 'sweep';
      readonly atMs: number;
      readonly olderThanMs: number;
      readonly bySecondProcess: boolean;
      /** Sweeps started together (1 or 2). */
      readonly copies: number;
    }
  | GatewayAction;

/** Where the process dies: the `occurrence`-th append holding `eventType` in the wave, before or after it is written. */
export interface CrashPlan {
  readonly eventType: string;
  readonly when: 'before' | 'after';
  readonly occurrence: number;
}

export interface WavePlan {
  readonly index: number;
  readonly actions: readonly WaveAction[];
  readonly crash: CrashPlan | undefined;
  /** Stop and start the process after the wave (a clean restart: the runner resumes from its checkpoint). */
  readonly restartAfter: boolean;
}

/** Store faults, per mille of appends, while a wave runs. */
export interface StoreFaultRates {
  readonly conflictPerMille: number;
  readonly secondWriterPerMille: number;
  readonly lostAckPerMille: number;
}

/** Each process's own recovery (InvocationRecovery): its period and staleness threshold. */
export interface RecoveryPlan {
  readonly node: RecoverySettings;
  readonly second: RecoverySettings;
}

export interface ScenarioPlan {
  readonly seed: number;
  readonly invocations: number;
  readonly organizations: readonly OrganizationPlan[];
  readonly operations: readonly OperationPlan[];
  readonly waves: readonly WavePlan[];
  readonly storeFaults: StoreFaultRates;
  readonly recovery: RecoveryPlan;
  /** The rate card, the gateway-only organizations and every organization's keys (gateway-scenario.ts). */
  readonly gateway: GatewayPlan;
}

/**
 * Every boundary between lifecycle transitions where a process can die, named by the event whose
 * append it dies beside (docs/lifecycle.md; HoldPlaced and HoldSettled are the account's side of 3 and 8–14).
 */
export const CRASH_BOUNDARIES = [
  'InvocationEstimated',
  'HoldPlaced',
  'InvocationReserved',
  'InvocationDispatched',
  'AttemptRecorded',
  'InvocationCompleted',
  'InvocationFailed',
  'InvocationPending',
  'InvocationSettled',
  'HoldSettled',
  'InvocationRefused',
  'CreditsGranted',
  'OperationPublished',
] as const;

/** Share of waves with a crash point, in percent. */
const CRASH_WAVE_PERCENT = 60;
/** Share of waves followed by a clean restart, in percent. */
const CLEAN_RESTART_PERCENT = 15;
/** Share of publications with a long conversation budget (60 turns, 4 attempts each, 10 minutes), in percent. */
const LONG_PUBLICATION_PERCENT = 10;
/**
 * Smallest hold of a long publication, in credits: the credit guard stops every turn that continues
 * past the hold, so a long conversation needs room to pass the 64 retained attempts.
 */
const LONG_PUBLICATION_MIN_HOLD_CREDITS = 200_000;
/** Share of invocations followed by a sweep at their conversation's deadline, in percent. */
const DEADLINE_SWEEP_PERCENT = 10;
/** Staleness thresholds a sweep is given, from reckless (0: anything idle at all) to cautious. */
const SWEEP_THRESHOLDS_MS = [0, 1_000, 10_000, 60_000, 300_000] as const;
/**
 * Recovery's periods and thresholds, up to their defaults; thresholds from the shortest the
 * configuration allows. Periods start at 5 s: a pass a second over hours of virtual time costs the
 * run minutes and finds nothing more. The final idle (FINAL_IDLE_MS) lets the slowest finish everything.
 */
const RECOVERY_INTERVALS_MS = [5_000, 15_000, 30_000, DEFAULT_RECOVERY_INTERVAL_MS] as const;
const RECOVERY_THRESHOLDS_MS = [MIN_RECOVERY_STALE_AFTER_MS, 10_000, 60_000, DEFAULT_RECOVERY_STALE_AFTER_MS] as const;

/** The terms of a publication, drawn so every outcome of docs/rules.md is reachable. */
export function drawPublication(prng: Prng, enabled = true): PublicationRequest {
  // Now and then a long conversation, so a chatty or faulty model passes the 64 retained attempts
  // (docs/rules.md rule 07).
  const long = prng.chance(LONG_PUBLICATION_PERCENT);
  const drawnHold = (): number => prng.pick([0, 50, 200, 500, 500, 2_000, 2_000, 10_000]);
  return {
    routing: { provider: 'scripted', model: `sim-model-${prng.int(1, 3)}` },
    limits: {
      maxTurns: long ? 60 : prng.int(1, 8),
      maxToolCalls: prng.int(0, 10),
      totalTimeMs: long ? 600_000 : prng.pick([5_000, 20_000, 60_000, 120_000]),
      attemptTimeoutMs: prng.pick([500, 2_000, 10_000]),
      maxOutputTokens: prng.pick([256, 1_024, 4_096]),
      maxAttemptsPerTurn: long ? 4 : prng.int(1, 4),
    },
    prices: {
      inputPerMTok: prng.pick([0, 1_000, 250_000, 3_000_000]),
      outputPerMTok: prng.pick([0, 5_000, 1_000_000, 15_000_000]),
      cacheWritePerMTok: prng.pick([0, 3_750_000]),
      cacheReadPerMTok: prng.pick([0, 300_000]),
    },
    creditHold: long ? Math.max(drawnHold(), LONG_PUBLICATION_MIN_HOLD_CREDITS) : drawnHold(),
    enabled,
  };
}

/**
 * Draws the scenario of `seed` with `invocations` invocations. `namespace` prefixes every id, so runs
 * can share one EventStoreDB without seeing each other's streams.
 */
export function planScenario(seed: number, invocations: number, namespace = ''): ScenarioPlan {
  if (!Number.isSafeInteger(invocations) || invocations < 1 || invocations > MAX_SCENARIO_INVOCATIONS) {
    throw new RangeError(`invocations must be 1 to ${MAX_SCENARIO_INVOCATIONS}, got ${invocations}`);
  }
  const root = new Prng(seed, 'scenario');
  const shape = root.fork('shape');

  const organizations: OrganizationPlan[] = [];
  const organizationCount = shape.int(MIN_ORGANIZATIONS, MAX_ORGANIZATIONS);
  for (let index = 0; index < organizationCount; index++) {
    organizations.push({
      id: `${namespace}org-${index}`,
      initialCredits: shape.pick([0, 2_000, 50_000, 50_000, 500_000, 500_000, 5_000_000, 5_000_000, 5_000_000, 5_000_000]),
      maxRunning: shape.int(1, 6),
    });
  }

  const operations: OperationPlan[] = [];
  const operationCount = shape.int(MIN_OPERATIONS, MAX_OPERATIONS);
  for (let index = 0; index < operationCount; index++) {
    // The first always runs; a later one may never be published, so it can only be refused.
    const published = index === 0 || shape.chance(85);
    operations.push({
      id: `${namespace}sim.op-${index}`,
      style: index > 0 && shape.chance(30) ? 'text-answer' : 'answer-tool',
      initial: published ? drawPublication(shape.fork(`publication-${index}`)) : undefined,
    });
  }

  const storeFaults: StoreFaultRates = {
    conflictPerMille: shape.pick([0, 10, 30, 60]),
    secondWriterPerMille: shape.pick([0, 10, 30]),
    lostAckPerMille: shape.pick([0, 3, 10]),
  };

  const recoveryOf = (prng: Prng): RecoverySettings => ({ intervalMs: prng.pick(RECOVERY_INTERVALS_MS), staleAfterMs: prng.pick(RECOVERY_THRESHOLDS_MS) });
  const recoveryPrng = root.fork('recovery');
  const recovery: RecoveryPlan = { node: recoveryOf(recoveryPrng), second: recoveryOf(recoveryPrng) };

  const gateway = planGateway(root, organizations, namespace);
  const waves: WavePlan[] = [];
  /** The terms each operation was last published with, as far as the plan knows. */
  const terms = new Map<string, PublicationRequest>();
  for (const operation of operations) if (operation.initial !== undefined) terms.set(operation.id, operation.initial);
  let planned = 0;
  for (let index = 0; planned < invocations && index < MAX_WAVES; index++) {
    const prng = root.fork(`wave-${index}`);
    const count = Math.min(invocations - planned, prng.int(MIN_WAVE_INVOCATIONS, MAX_WAVE_INVOCATIONS));
    const wave = planWave(prng, index, count, planned, organizations, operations, namespace, seed, terms);
    waves.push({ ...wave, actions: [...wave.actions, ...planGatewayWave(prng, index, gateway), ...planLeasePause(root.fork(`lease-pause-${index}`))] });
    for (const action of wave.actions) if (action.kind === 'publish') terms.set(action.operationId, action.terms);
    planned += count;
  }
  return { seed, invocations, organizations, operations, waves, storeFaults, recovery, gateway };
}

/**
 * Now and then a process renews no lease for a while, from its own stream (so the rest of the plan is
 * drawn as before): one renewal missed, two (the lease survives both), or long enough for it to lapse,
 * when recovery settles what it owned while it still runs, and it takes a new lease.
 */
function planLeasePause(prng: Prng): WaveAction[] {
  if (!prng.chance(LEASE_PAUSE_WAVE_PERCENT)) return [];
  const third = Math.floor(SIMULATED_LEASE_DURATION_MS / 3);
  const durationMs = prng.pick([third + WAVE_GRID_MS, 2 * third - WAVE_GRID_MS, 2 * SIMULATED_LEASE_DURATION_MS]);
  return [{ kind: 'pause-lease', atMs: prng.int(0, WAVE_SPREAD_MS / WAVE_GRID_MS) * WAVE_GRID_MS, process: prng.chance(50) ? 'node' : 'second', durationMs }];
}

/** The draws a wave's actions share, all from the wave's own stream. */
interface WaveDraws {
  readonly prng: Prng;
  /** An instant of the wave. */
  at(): number;
  /** Now, or within `maxMs`. */
  soon(maxMs: number): number;
  /** One of the organizations. */
  organization(): string;
}

function planWave(
  prng: Prng,
  index: number,
  count: number,
  firstInvocation: number,
  organizations: readonly OrganizationPlan[],
  operations: readonly OperationPlan[],
  namespace: string,
  seed: number,
  terms: ReadonlyMap<string, PublicationRequest>,
): WavePlan {
  const draws: WaveDraws = {
    prng,
    // On a grid, so several pieces of work start at the same instant and race for real.
    at: () => prng.int(0, WAVE_SPREAD_MS / WAVE_GRID_MS) * WAVE_GRID_MS,
    soon: (maxMs) => (prng.chance(50) ? 0 : prng.int(0, maxMs / WAVE_GRID_MS) * WAVE_GRID_MS),
    organization: () => prng.pick(organizations).id,
  };
  // In this order: each draws from the one stream, so the order is the plan.
  const actions: WaveAction[] = [];
  for (let n = 0; n < count; n++) actions.push(...planInvocation(draws, `i${firstInvocation + n}`, operations, namespace, terms));
  actions.push(...planAccountChanges(draws, index, operations, namespace), ...planSweeps(draws));
  const crash = planCrash(prng, index, seed);
  return { index, actions, crash, restartAfter: crash === undefined && prng.chance(CLEAN_RESTART_PERCENT) };
}

/** One invocation of the wave, with its repeats, and a sweep aimed at its deadline now and then. */
function planInvocation(
  { prng, at, soon, organization }: WaveDraws,
  tag: string,
  operations: readonly OperationPlan[],
  namespace: string,
  terms: ReadonlyMap<string, PublicationRequest>,
): WaveAction[] {
  const actions: WaveAction[] = [];
  const organizationId = organization();
  const idempotencyKey = `${namespace}key-${tag}`;
  const operationId = prng.pick(operations).id;
  const repeats: RepeatPlan[] = [];
  if (prng.chance(20)) repeats.push({ afterMs: soon(5_000), bySecondProcess: false, otherOperationId: undefined });
  if (prng.chance(10)) repeats.push({ afterMs: soon(2_000), bySecondProcess: true, otherOperationId: undefined });
  if (operations.length > 1 && prng.chance(4)) {
    const other = operations.find((operation) => operation.id !== operationId)!.id;
    repeats.push({ afterMs: prng.int(0, 60_000), bySecondProcess: prng.chance(50), otherOperationId: other });
  }
  const atMs = at();
  // A sweep aimed at the instant the conversation's time budget runs out, with no threshold: the
  // sweep must still leave the conversation alone until the conversation's own deadline.
  const totalTimeMs = terms.get(operationId)?.limits.totalTimeMs;
  if (totalTimeMs !== undefined && prng.chance(DEADLINE_SWEEP_PERCENT)) {
    actions.push({ kind: 'sweep', atMs: atMs + totalTimeMs, olderThanMs: 0, bySecondProcess: prng.chance(50), copies: 1 });
  }
  actions.push({
    kind: 'invoke',
    atMs,
    plan: {
      tag,
      idempotencyKey,
      invocationId: invocationIdFor(organizationId, idempotencyKey),
      organizationId,
      operationId,
      bySecondProcess: prng.chance(15),
      cancelAfterMs: prng.chance(10) ? prng.int(0, 20_000) : undefined,
      repeats,
    },
  });
  return actions;
}

/** Now and then a publication, a grant, an adjustment and an organization's settings changed. */
function planAccountChanges({ prng, at, organization }: WaveDraws, index: number, operations: readonly OperationPlan[], namespace: string): WaveAction[] {
  const actions: WaveAction[] = [];
  if (prng.chance(50)) {
    const operation = prng.pick(operations);
    actions.push({ kind: 'publish', atMs: at(), operationId: operation.id, terms: drawPublication(prng.fork('publication'), !prng.chance(10)) });
  }
  if (prng.chance(40)) {
    actions.push({
      kind: 'grant',
      atMs: at(),
      organizationId: organization(),
      credits: prng.int(100, 20_000),
      idempotencyKey: `${namespace}grant-w${index}`,
      repeatAfterMs: prng.chance(40) ? prng.int(0, 5_000) : undefined,
    });
  }
  if (prng.chance(25)) {
    const credits = prng.int(1, 5_000) * (prng.chance(50) ? -1 : 1);
    actions.push({
      kind: 'adjust',
      atMs: at(),
      organizationId: organization(),
      credits,
      idempotencyKey: `${namespace}adjust-w${index}`,
      repeatAfterMs: prng.chance(30) ? prng.int(0, 5_000) : undefined,
    });
  }
  if (prng.chance(25)) actions.push(...planSettings({ prng, at, organization }));
  return actions;
}

/** An organization's concurrency changed, or its AI turned off for a while and on again within the wave. */
function planSettings({ prng, at, organization }: Omit<WaveDraws, 'soon'>): WaveAction[] {
  const organizationId = organization();
  if (prng.chance(50)) return [{ kind: 'settings', atMs: at(), organizationId, maxRunning: prng.int(1, 6) }];
  const offAt = at();
  return [
    { kind: 'settings', atMs: offAt, organizationId, aiEnabled: false },
    { kind: 'settings', atMs: offAt + prng.int(1_000, 20_000), organizationId, aiEnabled: true },
  ];
}

/** One to three sweeps at random instants, thresholds and processes, some sent twice at once. */
function planSweeps({ prng, at }: WaveDraws): WaveAction[] {
  const actions: WaveAction[] = [];
  const sweeps = prng.int(1, 3);
  for (let n = 0; n < sweeps; n++) {
    actions.push({
      kind: 'sweep',
      atMs: at(),
      olderThanMs: prng.pick(SWEEP_THRESHOLDS_MS),
      bySecondProcess: prng.chance(40),
      copies: prng.chance(30) ? 2 : 1,
    });
  }
  return actions;
}

/**
 * Crash points walk through the boundaries with the wave number, so a run of several waves (and a
 * batch of seeds) visits each of them, before and after the write.
 */
function planCrash(prng: Prng, index: number, seed: number): CrashPlan | undefined {
  if (!prng.chance(CRASH_WAVE_PERCENT)) return undefined;
  return {
    eventType: CRASH_BOUNDARIES[modulo(index + seed, CRASH_BOUNDARIES.length)]!,
    when: modulo(Math.floor((index + seed) / CRASH_BOUNDARIES.length) + index, 2) === 0 ? 'after' : 'before',
    occurrence: prng.int(1, 3),
  };
}

function modulo(value: number, divisor: number): number {
  return ((value % divisor) + divisor) % divisor;
}
