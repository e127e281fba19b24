import { segment } from '../api/client';
import type { GatewayTeam } from '../api/types';
import type { Loaded } from '../api/use-api';
import { Credits, Section, Show } from '../components/common';
import { Confirmation, Field, ManagedTable, SettingsForm, TaskRow, type Column } from '../components/forms';
import { formatCount, formatTime } from '../format';
import { useSession } from '../session/session';
import { EMPTY_LIMIT_DRAFT, limitBody, limitDraftOf, LimitFields, limitWords, type LimitDraft } from './limit-fields';
import { useWrites, type Writes } from '../api/use-writes';

interface TeamDraft extends LimitDraft {
  readonly name: string;
}

const EMPTY_TEAM_DRAFT: TeamDraft = { name: '', ...EMPTY_LIMIT_DRAFT };

type TeamTask = { readonly kind: 'create' } | { readonly kind: 'change' | 'delete'; readonly teamId: string };

/** The team form's state, shared by the rows: the one team being created or changed, and how to send it. */
interface TeamForms {
  readonly writes: Writes<TeamTask, TeamDraft>;
  readonly send: (method: 'POST' | 'PATCH' | 'DELETE', teamId?: string) => void;
}

/**
 * The organization's gateway teams (a spend limit its keys share): each with what its keys spent in
 * its period and hold, its limit and alerts, its live keys; created, changed and deleted here.
 */
export function GatewayTeamsSection({ organizationId, teams, onWritten }: { organizationId: string; teams: Loaded<{ teams: GatewayTeam[] }>; onWritten: () => void }) {
  const { api } = useSession();
  const writes = useWrites<TeamTask, TeamDraft>(EMPTY_TEAM_DRAFT, onWritten);
  const teamsPath = `/v1/organizations/${segment(organizationId)}/teams`;
  const send = (method: 'POST' | 'PATCH' | 'DELETE', teamId?: string) => {
    const path = teamId === undefined ? teamsPath : `${teamsPath}/${segment(teamId)}`;
    const what = method === 'POST' ? 'create the team' : method === 'PATCH' ? 'change the team' : 'delete the team';
    void writes.write(what, () => api.send(method, path, method === 'DELETE' ? undefined : { name: writes.draft.name, ...limitBody(writes.draft) }));
  };
  const forms: TeamForms = { writes, send };
  const createButton = (
    <button type="button" onClick={() => writes.open({ kind: 'create' })}>
      Create a team
    </button>
  );
  return (
    <Section id="gateway-teams" title="Teams" actions={createButton}>
      {writes.task?.kind === 'create' && <TeamForm id="create-team" label="Create a team" submitLabel="Create the team" forms={forms} onSubmit={() => send('POST')} />}
      <Show loaded={teams} what="the teams">
        {({ teams: list }) => (list.length === 0 ? <p class="muted">No teams: each key’s calls count against its own limit and the organization’s credits only.</p> : <TeamsTable teams={list} forms={forms} />)}
      </Show>
    </Section>
  );
}

function TeamForm({ id, label, submitLabel, forms, onSubmit }: { id: string; label: string; submitLabel: string; forms: TeamForms; onSubmit: () => void }) {
  const { writes } = forms;
  const { draft, setDraft } = writes;
  return (
    <SettingsForm label={label} submitLabel={submitLabel} writing={writes.writing} onSubmit={onSubmit} onCancel={() => writes.open(undefined)}>
      <Field id={`${id}-name`} label="Name">
        <input id={`${id}-name`} required value={draft.name} onInput={(e) => setDraft({ ...draft, name: e.currentTarget.value })} />
      </Field>
      <LimitFields id={id} draft={draft} setDraft={(limit) => setDraft({ ...draft, ...limit })} whose="the team’s keys together" />
    </SettingsForm>
  );
}

/** The teams table's columns, before the actions. */
const TEAM_COLUMNS: readonly Column[] = [['Team'], ['Period'], ['Spent', 'num'], ['Held', 'num'], ['Limit'], ['Live keys', 'num']];

function TeamsTable({ teams, forms }: { teams: readonly GatewayTeam[]; forms: TeamForms }) {
  return (
    <ManagedTable label="Teams table" caption="Teams, oldest first, with what their keys spent in the current period" columns={TEAM_COLUMNS}>
      {teams.map((team) => (
        <TeamRows key={team.teamId} team={team} forms={forms} />
      ))}
    </ManagedTable>
  );
}

function TeamRows({ team, forms }: { team: GatewayTeam; forms: TeamForms }) {
  const { writes, send } = forms;
  const task = writes.task !== undefined && writes.task.kind !== 'create' && writes.task.teamId === team.teamId ? writes.task.kind : undefined;
  const change = () => writes.open({ kind: 'change', teamId: team.teamId }, { name: team.name, ...limitDraftOf(team) });
  return (
    <>
      <tr>
        <th scope="row">
          {team.name}
          <small class="key-id">
            <code class="id">{team.teamId}</code> created {formatTime(team.createdAt)}
          </small>
        </th>
        <td class="period">{team.period}</td>
        <td class="num spent">
          <Credits credits={team.spentCredits} money={team.money} figure="spentCredits" />
        </td>
        <td class="num held">
          <Credits credits={team.heldCredits} money={team.money} figure="heldCredits" />
        </td>
        <td class="limits">{limitWords(team)}</td>
        <td class="num">{formatCount(team.keyIds.length)}</td>
        <td class="actions">
          <button type="button" class="secondary" aria-label={`Change team ${team.name}`} onClick={change}>
            Change
          </button>
          <button type="button" class="secondary danger" aria-label={`Delete team ${team.name}`} onClick={() => writes.open({ kind: 'delete', teamId: team.teamId })}>
            Delete
          </button>
        </td>
      </tr>
      {task !== undefined && (
        <TaskRow columns={TEAM_COLUMNS.length + 1}>
          {task === 'change' ? (
            <TeamForm id={`change-team-${team.teamId}`} label={`Change the team “${team.name}”`} submitLabel="Save the team" forms={forms} onSubmit={() => send('PATCH', team.teamId)} />
          ) : (
            <Confirmation question={`Delete the team “${team.name}”?`} confirmLabel={`Delete “${team.name}”`} cancelLabel="Keep it" writing={writes.writing} onConfirm={() => send('DELETE', team.teamId)} onCancel={() => writes.open(undefined)}>
              Its limit no longer applies; a team that a live key names cannot be deleted (move or revoke the key first).
            </Confirmation>
          )}
        </TaskRow>
      )}
    </>
  );
}
