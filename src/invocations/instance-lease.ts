/**
 * An instance's lease (docs/lifecycle.md "Recovery"): ordinary events on a stream of its own,
 * `lease-<leaseId>`, so it works on every store the event-store port has. A running instance
 * takes one at start and renews it every third of its duration; every invocation it starts records
 * the lease as its owner (InvocationEstimated's `ownerLeaseId`). Recovery settles what a lease owns
 * only once the lease has lapsed, and records that it did (InstanceLeaseExpired) before settling
 * anything: a lapsed lease is never renewed again (an instance that was only paused takes a new one),
 * so an instance recovery counts as stopped cannot come back to the calls it owned.
 */
import type { Decider, DomainCommand, DomainEvent } from '../domain/decider';
import { IllegalTransitionError } from '../domain/domain.errors';
import { FieldChecks, isoToMs } from '../domain/field-checks';
import { MAX_LEASE_DURATION_MS, MIN_LEASE_DURATION_MS } from '../domain/recovery.settings';

/** Renewals per lease duration: a lease survives two lost or late renewals before it lapses. */
export const LEASE_RENEWALS_PER_DURATION = 3;
/** Longest instance description a lease records (host name and process id), in characters. */
const MAX_INSTANCE_CHARS = 200;

export const leaseStreamName = (leaseId: string): string => `lease-${leaseId}`;

/** How often a live instance renews its lease, in ms: a third of its duration. */
export function leaseRenewalPeriodMs(leaseDurationMs: number): number {
  return Math.floor(leaseDurationMs / LEASE_RENEWALS_PER_DURATION);
}

/**
 * The longest a dead instance's holds stay held with no operator, in ms, counted from its death: its
 * lease lapses at most `leaseDurationMs` after (its last renewal came before it died), and the next
 * recovery pass of any live instance, at most `recoveryIntervalMs` later, records the lapse and
 * settles what it owned; one renewal period on top is the pass's own time. At the defaults
 * (30 s, 60 s) 100 s.
 */
export function deadInstanceReleaseBoundMs(leaseDurationMs: number, recoveryIntervalMs: number): number {
  return leaseDurationMs + leaseRenewalPeriodMs(leaseDurationMs) + recoveryIntervalMs;
}

export type InstanceLeaseEvent =
  | DomainEvent<'InstanceLeaseTaken', { readonly leaseId: string; readonly instance: string; readonly takenAt: string; readonly expiresAt: string }>
  | DomainEvent<'InstanceLeaseRenewed', { readonly renewedAt: string; readonly expiresAt: string }>
  /** Written by recovery (any instance's) that found the lease lapsed: `lapsedAt` is the expiry it passed. */
  | DomainEvent<'InstanceLeaseExpired', { readonly expiredAt: string; readonly lapsedAt: string }>;

export const INSTANCE_LEASE_EVENT_TYPES: readonly InstanceLeaseEvent['type'][] = ['InstanceLeaseTaken', 'InstanceLeaseRenewed', 'InstanceLeaseExpired'];

export type InstanceLeaseCommand =
  | DomainCommand<'TakeLease', { readonly leaseId: string; readonly instance: string; readonly takenAt: string; readonly durationMs: number }>
  | DomainCommand<'RenewLease', { readonly renewedAt: string; readonly durationMs: number }>
  | DomainCommand<'ExpireLease', { readonly expiredAt: string }>;

export interface InstanceLeaseState {
  /** `none`: the stream does not exist. `expired`: recorded lapsed, for good. */
  readonly status: 'none' | 'live' | 'expired';
  readonly leaseId: string | undefined;
  /** ISO-8601: when it lapses unless renewed (`live`), or the expiry it passed (`expired`). */
  readonly expiresAt: string | undefined;
  /** ISO-8601: when recovery recorded it lapsed. */
  readonly expiredAt: string | undefined;
}

export function initialLeaseState(): InstanceLeaseState {
  return { status: 'none', leaseId: undefined, expiresAt: undefined, expiredAt: undefined };
}

/** A live lease that has lapsed by `nowMs`: recovery may record it expired. */
export function leaseLapsed(state: InstanceLeaseState, nowMs: number): boolean {
  return state.status === 'live' && state.expiresAt !== undefined && nowMs > isoToMs(state.expiresAt);
}

function decideLease(command: InstanceLeaseCommand, state: InstanceLeaseState): InstanceLeaseEvent[] {
  const checks = new FieldChecks();
  switch (command.type) {
    case 'TakeLease': {
      const leaseId = checks.id('leaseId', command.data.leaseId);
      const instance = checks.text('instance', command.data.instance, MAX_INSTANCE_CHARS);
      const takenAt = checks.instant('takenAt', command.data.takenAt);
      const durationMs = checks.integer('durationMs', command.data.durationMs, { min: MIN_LEASE_DURATION_MS, max: MAX_LEASE_DURATION_MS, unit: 'ms' });
      checks.throwIfAny();
      if (state.status !== 'none') throw new IllegalTransitionError(state.status, command.type, 'a lease is taken once');
      return [{ type: 'InstanceLeaseTaken', data: { leaseId, instance, takenAt, expiresAt: after(takenAt, durationMs) } }];
    }
    case 'RenewLease': {
      const renewedAt = checks.instant('renewedAt', command.data.renewedAt);
      const durationMs = checks.integer('durationMs', command.data.durationMs, { min: MIN_LEASE_DURATION_MS, max: MAX_LEASE_DURATION_MS, unit: 'ms' });
      checks.throwIfAny();
      // Lapsed (recorded or not): recovery may already be settling what it owned. Take a new lease.
      if (state.status !== 'live' || leaseLapsed(state, isoToMs(renewedAt))) {
        throw new IllegalTransitionError(state.status, command.type, `the lease lapsed at ${state.expiresAt ?? 'its start'}; take a new one`);
      }
      return [{ type: 'InstanceLeaseRenewed', data: { renewedAt, expiresAt: after(renewedAt, durationMs) } }];
    }
    case 'ExpireLease': {
      const expiredAt = checks.instant('expiredAt', command.data.expiredAt);
      checks.throwIfAny();
      // Still live, or recorded expired already: nothing to write.
      if (!leaseLapsed(state, isoToMs(expiredAt))) return [];
      return [{ type: 'InstanceLeaseExpired', data: { expiredAt, lapsedAt: state.expiresAt! } }];
    }
  }
}

function evolveLease(state: InstanceLeaseState, event: InstanceLeaseEvent): InstanceLeaseState {
  switch (event.type) {
    case 'InstanceLeaseTaken':
      return { ...state, status: 'live', leaseId: event.data.leaseId, expiresAt: event.data.expiresAt };
    case 'InstanceLeaseRenewed':
      return { ...state, expiresAt: event.data.expiresAt };
    case 'InstanceLeaseExpired':
      return { ...state, status: 'expired', expiresAt: event.data.lapsedAt, expiredAt: event.data.expiredAt };
    default:
      return state;
  }
}

function after(iso: string, ms: number): string {
  return new Date(isoToMs(iso) + ms).toISOString();
}

export const instanceLeaseDecider: Decider<InstanceLeaseCommand, InstanceLeaseEvent, InstanceLeaseState> = {
  decide: decideLease,
  evolve: evolveLease,
  initialState: initialLeaseState,
};

/** What an invocation's run asks of the instance's lease: the id to record as the owner of what it starts. */
export interface LeaseHolder {
  /** The lease in force; undefined before the first is taken (nothing is owned then). */
  readonly leaseId: string | undefined;
}

/** The injection token of the instance's LeaseHolder (optional: an application without one records no owner). */
export const INSTANCE_LEASE = Symbol('INSTANCE_LEASE');
