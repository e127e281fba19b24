/**
 * Snapshots of a credit account (see src/aggregates/aggregate-snapshots.ts): an organization's
 * account stream gains two events per invocation forever, so without them the first admission after
 * a restart would fold its whole history (about 12 s at 1,000,000 events on the benchmark machine).
 */
import { Map as ImmutableMap, OrderedMap } from 'immutable';
import type { SnapshotCodec } from '../aggregates/aggregate-snapshots';
import { heldFiguresOf, type AccountState, type LedgerEntry, type OpenHold } from './account.state';
import type { AlertThreshold } from './credit-alerts';
import type { GatewayKey } from './gateway-keys';
import type { GatewayTeam } from './gateway-teams';

/** Account events between two snapshots: a cold load reads at most this many after the latest one. */
export const ACCOUNT_SNAPSHOT_EVERY_EVENTS = 10_000;

interface EncodedAccount {
  readonly exists: boolean;
  readonly granted: number;
  readonly adjustments: number;
  readonly charged: number;
  readonly aiEnabled: boolean;
  readonly maxRunning: number;
  readonly openHolds: readonly (readonly [string, OpenHold])[];
  readonly ledgerEntries: readonly (readonly [string, LedgerEntry])[];
  readonly alertThresholds: readonly AlertThreshold[];
  readonly crossedThresholds: readonly string[];
  /** Absent in version-2 snapshots, written before gateway keys existed. */
  readonly gatewayKeys?: readonly GatewayKey[];
  /** Absent in snapshots written before teams existed (none had a team). */
  readonly gatewayTeams?: readonly GatewayTeam[];
}

const NUMBER_FIELDS = ['granted', 'adjustments', 'charged', 'maxRunning'] as const;

export const accountSnapshot: SnapshotCodec<AccountState> = {
  // 2: credit alert thresholds and their recorded crossings; 3: gateway keys (docs/gateway.md).
  version: 3,
  everyEvents: ACCOUNT_SNAPSHOT_EVERY_EVENTS,
  encode(state): EncodedAccount {
    return {
      exists: state.exists,
      granted: state.granted,
      adjustments: state.adjustments,
      charged: state.charged,
      aiEnabled: state.aiEnabled,
      maxRunning: state.maxRunning,
      openHolds: [...state.openHolds],
      ledgerEntries: [...state.ledgerEntries],
      alertThresholds: state.alertThresholds,
      crossedThresholds: [...state.crossedThresholds],
      gatewayKeys: [...state.gatewayKeys.values()],
      gatewayTeams: [...state.gatewayTeams.values()],
    };
  },
  decode(data): AccountState {
    const encoded = data as EncodedAccount;
    // Money decides admissions: refuse anything but exact integers and the two entry lists.
    for (const field of NUMBER_FIELDS) {
      if (!Number.isSafeInteger(encoded?.[field])) throw new TypeError(`account snapshot: ${field} is not an integer`);
    }
    if (typeof encoded.exists !== 'boolean' || typeof encoded.aiEnabled !== 'boolean') throw new TypeError('account snapshot: flags');
    if (!Array.isArray(encoded.openHolds) || !Array.isArray(encoded.ledgerEntries)) throw new TypeError('account snapshot: entries');
    if (!Array.isArray(encoded.alertThresholds) || !Array.isArray(encoded.crossedThresholds)) throw new TypeError('account snapshot: alerts');
    const keys = encoded.gatewayKeys ?? [];
    if (!Array.isArray(keys) || !keys.every((key) => Number.isSafeInteger(key?.spentInPeriod))) throw new TypeError('account snapshot: gateway keys');
    const teams = encoded.gatewayTeams ?? [];
    if (!Array.isArray(teams) || !teams.every((team) => Number.isSafeInteger(team?.spentInPeriod))) throw new TypeError('account snapshot: gateway teams');
    const openHolds = OrderedMap<string, OpenHold>(encoded.openHolds);
    return {
      exists: encoded.exists,
      granted: encoded.granted,
      adjustments: encoded.adjustments,
      charged: encoded.charged,
      aiEnabled: encoded.aiEnabled,
      maxRunning: encoded.maxRunning,
      openHolds,
      ledgerEntries: OrderedMap(encoded.ledgerEntries),
      alertThresholds: encoded.alertThresholds,
      crossedThresholds: new Set(encoded.crossedThresholds),
      gatewayKeys: OrderedMap(keys.map((key) => [key.keyId, key])),
      // A secret rotated away is found until its grace ends, as evolve keeps it (withKeyRotated).
      gatewayKeyHashes: ImmutableMap(keys.flatMap((key): [string, string][] => [[key.keyHash, key.keyId], ...(key.previousKeyHash === undefined ? [] : [[key.previousKeyHash, key.keyId] as [string, string]])])),
      gatewayTeams: OrderedMap(teams.map((team) => [team.teamId, team])),
      // Derived, never written: walked once from the holds, so a snapshot cannot disagree with them.
      held: heldFiguresOf(openHolds),
    };
  },
};
