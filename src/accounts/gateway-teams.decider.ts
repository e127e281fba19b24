/**
 * The account decider's part for teams and budget alerts (docs/gateway.md "Teams", "Budget alerts"):
 * creating, changing and deleting a team, the team a gateway hold counts against, and the
 * GatewayBudgetThresholdCrossed a settlement appends. Decided on the same state and in the same append
 * as the rest of the account, so no instance can see a team or an alert another has not.
 */
import { IdempotencyConflictError, IllegalTransitionError, ValidationError } from '../domain/domain.errors';
import { FieldChecks } from '../domain/field-checks';
import type { ChangeGatewayTeam, CreateGatewayTeam, DeleteGatewayTeam } from './account.commands';
import type { AccountEvent, GatewayBudgetThresholdCrossed, HoldGatewayKey } from './account.events';
import { evolveAccount, keyHoldsByPeriod, teamHoldsByPeriod, type AccountState, type OpenHold } from './account.state';
import { newlyReached, type BudgetAlertsSent } from './budget-alerts';
import { countedPeriod, periodOf, type GatewayKey, type SpendLimit } from './gateway-keys';
import { MAX_GATEWAY_TEAMS_PER_ORGANIZATION, readTeamSettings, UnknownGatewayTeamError, type GatewayTeamSettings } from './gateway-teams';

export type TeamCommand = CreateGatewayTeam | ChangeGatewayTeam | DeleteGatewayTeam;

/** CreateGatewayTeam → GatewayTeamCreated; ChangeGatewayTeam → GatewayTeamChanged; DeleteGatewayTeam → GatewayTeamDeleted. */
export function decideTeamCommand(command: TeamCommand, state: AccountState): AccountEvent[] {
  if (command.type === 'DeleteGatewayTeam') return deleteTeam(command, state);
  const checks = new FieldChecks();
  const teamId = checks.id('teamId', command.data.teamId);
  const settings = readTeamSettings(checks, command.data as unknown as Record<string, unknown>);
  const at = checks.instant(command.type === 'CreateGatewayTeam' ? 'createdAt' : 'changedAt', command.type === 'CreateGatewayTeam' ? command.data.createdAt : command.data.changedAt);
  checks.throwIfAny();
  const existing = state.gatewayTeams.get(teamId);
  if (command.type === 'ChangeGatewayTeam') {
    if (existing === undefined) throw new UnknownGatewayTeamError(teamId);
    return [{ type: 'GatewayTeamChanged', data: { teamId, ...settings, changedAt: at } }];
  }
  // Teams belong to an organization someone funded or configured; creating one never creates it.
  if (!state.exists) throw new IllegalTransitionError('no account', 'CreateGatewayTeam');
  // A retried creation (same id, same settings) writes nothing; another team under its id is refused.
  if (existing !== undefined) {
    if (sameSettings(existing, settings)) return [];
    throw new IdempotencyConflictError(teamId, `gateway team ${teamId} exists already`);
  }
  if (state.gatewayTeams.size >= MAX_GATEWAY_TEAMS_PER_ORGANIZATION) {
    throw ValidationError.of('teamId', `the organization has ${MAX_GATEWAY_TEAMS_PER_ORGANIZATION} teams, the most it may`);
  }
  return [{ type: 'GatewayTeamCreated', data: { teamId, ...settings, createdAt: at } }];
}

function sameSettings(a: GatewayTeamSettings, b: GatewayTeamSettings): boolean {
  return JSON.stringify([a.name, a.spendLimit, a.alertAt]) === JSON.stringify([b.name, b.spendLimit, b.alertAt]);
}

/**
 * A team is deleted only when no live key names it: deleting it under them would lift its limit from
 * their calls without anyone deciding so. Holds already placed under it settle without it.
 */
function deleteTeam({ data }: DeleteGatewayTeam, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const teamId = checks.id('teamId', data.teamId);
  const deletedAt = checks.instant('deletedAt', data.deletedAt);
  checks.throwIfAny();
  if (!state.gatewayTeams.has(teamId)) throw new UnknownGatewayTeamError(teamId);
  const keys = [...state.gatewayKeys.values()].filter((key) => key.teamId === teamId && key.revokedAt === undefined).map((key) => key.keyId);
  if (keys.length > 0) {
    throw new IllegalTransitionError('team with live keys', 'DeleteGatewayTeam', `${keys.length} live key(s) name it (${keys.slice(0, 5).join(', ')}): change their teamId or revoke them first`);
  }
  return [{ type: 'GatewayTeamDeleted', data: { teamId, deletedAt } }];
}

/** A key's `teamId` must name a team of the organization (400 naming `teamId` otherwise). */
export function assertKnownTeam(state: AccountState, teamId: string | undefined): void {
  if (teamId !== undefined && !state.gatewayTeams.has(teamId)) throw ValidationError.of('teamId', `names no team of this organization: "${teamId}"`);
}

/** The team a hold by `key` at `placedAt` counts against, and the team's period then; absent: no team. */
export function teamHoldOf(state: AccountState, key: GatewayKey, placedAt: string): HoldGatewayKey['team'] {
  const team = key.teamId === undefined ? undefined : state.gatewayTeams.get(key.teamId);
  return team === undefined ? undefined : { teamId: team.teamId, period: countedPeriod(team, placedAt) };
}

/** What a key or a team needs for its alerts to be read. */
interface AlertedLevel {
  readonly spendLimit?: SpendLimit;
  readonly alertAt?: readonly number[];
  readonly alertsSent?: BudgetAlertsSent;
  readonly spendPeriod?: string;
  readonly spentInPeriod: number;
}

/**
 * `events` (a settlement) followed by a GatewayBudgetThresholdCrossed for each `alertAt` threshold of
 * the settled hold's key and team that the charge reached in the hold's period and that was not yet
 * recorded for it. A period the level no longer counts (a later hold started another, or the limit's
 * period kind changed) is not alerted on.
 */
export function withBudgetAlerts(state: AccountState, events: AccountEvent[], invocationId: string, crossedAt: string): AccountEvent[] {
  const hold = state.openHolds.get(invocationId);
  const gatewayKey = hold?.gatewayKey;
  if (hold === undefined || gatewayKey === undefined) return events;
  const after = events.reduce(evolveAccount, state);
  const key = after.gatewayKeys.get(gatewayKey.keyId);
  if (key !== undefined) {
    const held = keyHoldsByPeriod(after, key.keyId).get(gatewayKey.period) ?? 0;
    events.push(...crossings(key, hold, gatewayKey.period, held, { kind: 'key', keyId: key.keyId, name: key.name }, invocationId, crossedAt));
  }
  const team = gatewayKey.team === undefined ? undefined : after.gatewayTeams.get(gatewayKey.team.teamId);
  if (team !== undefined) {
    const held = teamHoldsByPeriod(after, team.teamId).get(gatewayKey.team!.period) ?? 0;
    events.push(...crossings(team, hold, gatewayKey.team!.period, held, { kind: 'team', teamId: team.teamId, name: team.name }, invocationId, crossedAt));
  }
  return events;
}

function crossings(
  level: AlertedLevel,
  hold: OpenHold,
  period: string,
  held: number,
  budget: GatewayBudgetThresholdCrossed['data']['budget'],
  invocationId: string,
  crossedAt: string,
): GatewayBudgetThresholdCrossed[] {
  const limit = level.spendLimit;
  // A period of another kind than the limit's (the limit's period changed since the hold) is not alerted on.
  if (limit === undefined || level.spendPeriod !== period || periodOf(limit.period, hold.placedAt).length !== period.length) return [];
  return newlyReached(level.alertAt, limit.credits, level.spentInPeriod, period, level.alertsSent).map((percent) => ({
    type: 'GatewayBudgetThresholdCrossed',
    data: { budget, percent, period: limit.period, periodStart: period, limitCredits: limit.credits, spentCredits: level.spentInPeriod, heldCredits: held, invocationId, crossedAt },
  }));
}
