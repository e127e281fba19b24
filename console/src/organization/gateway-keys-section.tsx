import { useState } from 'preact/hooks';
import { segment } from '../api/client';
import { GATEWAY_REJECTION_REASONS, type GatewayKey, type GatewayTeam, type IssuedGatewayKey } from '../api/types';
import { useApi } from '../api/use-api';
import { Section, Show } from '../components/common';
import { Confirmation, ManagedTable, type Column } from '../components/forms';
import { formatCount, formatTime, words } from '../format';
import { useSession } from '../session/session';
import { GatewayTeamsSection } from './gateway-teams-section';
import { IssuedKeyNotice } from './issued-key-notice';
import { draftOfKey, EMPTY_KEY_DRAFT, keySettingsBody, KeySettingsForm, type KeyDraft } from './key-settings-form';
import { limitWords } from './limit-fields';
import { useWrites } from '../api/use-writes';

/** The roles `GET …/gateway-keys` answers (docs/gateway.md); for the others the section is not shown. */
const KEY_READERS: ReadonlySet<string> = new Set(['system', 'org_admin']);

/** An organization's gateway keys and teams, for the roles that may read them: what each spent in its period and holds, and the forms that manage them. */
export function GatewayKeysSection({ organizationId }: { organizationId: string }) {
  const { me } = useSession();
  if (!KEY_READERS.has(me.role)) return null;
  return <GatewayManagement organizationId={organizationId} />;
}

/** Keys and teams read again together after any write: a key's team changes the team's keys and figures. */
function GatewayManagement({ organizationId }: { organizationId: string }) {
  const [version, setVersion] = useState(0);
  const written = () => setVersion((count) => count + 1);
  const teams = useApi<{ teams: GatewayTeam[] }>(`/v1/organizations/${segment(organizationId)}/teams`, version);
  const teamList = teams.status === 'ok' ? teams.data.teams : [];
  return (
    <>
      <GatewayKeys organizationId={organizationId} version={version} teams={teamList} onWritten={written} />
      <GatewayTeamsSection organizationId={organizationId} teams={teams} onWritten={written} />
    </>
  );
}

/** What the keys section is doing besides listing: issuing a key, changing one, or asking to confirm a revocation. */
type KeyTask = { readonly kind: 'issue' } | { readonly kind: 'change' | 'revoke'; readonly keyId: string };

function useKeyWrites(organizationId: string, onWritten: () => void) {
  const { api } = useSession();
  const writes = useWrites<KeyTask, KeyDraft>(EMPTY_KEY_DRAFT, onWritten);
  const [issued, setIssued] = useState<IssuedGatewayKey | undefined>(undefined);
  const keysPath = `/v1/organizations/${segment(organizationId)}/gateway-keys`;
  return {
    ...writes,
    issued,
    forgetIssued: () => setIssued(undefined),
    issue: (draft: KeyDraft) => writes.write('issue the key', () => api.send<IssuedGatewayKey>('POST', keysPath, keySettingsBody(draft)), setIssued),
    change: (keyId: string, draft: KeyDraft) => writes.write('change the key', () => api.send('PATCH', `${keysPath}/${segment(keyId)}`, keySettingsBody(draft))),
    revoke: (keyId: string) => writes.write('revoke the key', () => api.send('DELETE', `${keysPath}/${segment(keyId)}`)),
  };
}

type KeyWrites = ReturnType<typeof useKeyWrites>;

/** What the keys table's rows share: the writes (with the draft of the one key being changed), and the teams to choose from. */
interface KeyForms {
  readonly writes: KeyWrites;
  readonly teams: readonly GatewayTeam[];
}

function GatewayKeys({ organizationId, version, teams, onWritten }: { organizationId: string; version: number; teams: readonly GatewayTeam[]; onWritten: () => void }) {
  const writes = useKeyWrites(organizationId, onWritten);
  const keys = useApi<{ keys: GatewayKey[] }>(`/v1/organizations/${segment(organizationId)}/gateway-keys`, version);
  const { draft, setDraft } = writes;
  const forms: KeyForms = { writes, teams };
  const issueButton = (
    <button type="button" onClick={() => writes.open({ kind: 'issue' })}>
      Issue a key
    </button>
  );
  return (
    <Section id="gateway-keys" title="Gateway keys" actions={issueButton}>
      {writes.issued !== undefined && <IssuedKeyNotice issued={writes.issued} onDone={writes.forgetIssued} />}
      {writes.task?.kind === 'issue' && (
        <KeySettingsForm id="issue-key" label="Issue a gateway key" draft={draft} setDraft={setDraft} teams={teams} submitLabel="Issue the key" writing={writes.writing} onSubmit={() => void writes.issue(draft)} onCancel={() => writes.open(undefined)} />
      )}
      <Show loaded={keys} what="the gateway keys">
        {({ keys: list }) => (list.length === 0 ? <p class="muted">No gateway keys were issued for this organization.</p> : <KeysTable keys={list} forms={forms} />)}
      </Show>
    </Section>
  );
}

/** The keys table's columns, before the actions. */
const KEY_COLUMNS: readonly Column[] = [['Key'], ['Status'], ['Period'], ['Spent', 'num'], ['Held', 'num'], ['Limits'], ['Refusals', 'num'], ['Models']];

function KeysTable({ keys, forms }: { keys: readonly GatewayKey[]; forms: KeyForms }) {
  return (
    <ManagedTable label="Gateway keys table" caption="Gateway keys, oldest first, with their status and their spend in the current period" columns={KEY_COLUMNS}>
      {keys.map((key) => (
        <KeyRows key={key.keyId} gatewayKey={key} forms={forms} />
      ))}
    </ManagedTable>
  );
}

/** A key's row, and under it the form that changes it or the question that confirms its revocation. */
function KeyRows({ gatewayKey: key, forms }: { gatewayKey: GatewayKey; forms: KeyForms }) {
  const { writes, teams } = forms;
  const { draft, setDraft } = writes;
  const task = writes.task !== undefined && writes.task.kind !== 'issue' && writes.task.keyId === key.keyId ? writes.task.kind : undefined;
  return (
    <>
      <KeyRow
        gatewayKey={key}
        team={teams.find((team) => team.teamId === key.teamId)?.name ?? key.teamId}
        onChange={() => writes.open({ kind: 'change', keyId: key.keyId }, draftOfKey(key))}
        onRevoke={() => writes.open({ kind: 'revoke', keyId: key.keyId })}
      />
      {task === 'change' && (
        <tr class="task-row">
          <td colSpan={KEY_COLUMNS.length + 1}>
            <KeySettingsForm
              id={`change-key-${key.keyId}`}
              label={`Change the key “${key.name}”`}
              draft={draft}
              setDraft={setDraft}
              teams={teams}
              submitLabel="Save the key"
              writing={writes.writing}
              onSubmit={() => void writes.change(key.keyId, draft)}
              onCancel={() => writes.open(undefined)}
            />
          </td>
        </tr>
      )}
      {task === 'revoke' && (
        <tr class="task-row">
          <td colSpan={KEY_COLUMNS.length + 1}>
            <Confirmation
              question={`Revoke the key “${key.name}”?`}
              confirmLabel={`Revoke “${key.name}”`}
              cancelLabel="Keep it"
              writing={writes.writing}
              onConfirm={() => void writes.revoke(key.keyId)}
              onCancel={() => writes.open(undefined)}
            >
              Every instance refuses it from the next call on, and a revoked key cannot be brought back: its callers will need a new key.
            </Confirmation>
          </td>
        </tr>
      )}
    </>
  );
}

function KeyRow({ gatewayKey: key, team, onChange, onRevoke }: { gatewayKey: GatewayKey; team: string | undefined; onChange: () => void; onRevoke: () => void }) {
  const refusals = GATEWAY_REJECTION_REASONS.filter((reason) => (key.rejections[reason] ?? 0) > 0);
  return (
    <tr>
      <th scope="row">
        {key.name}
        <small class="key-id">
          <code class="id">{key.keyId}</code> issued {formatTime(key.issuedAt)}
        </small>
        {team !== undefined && <small class="key-id">team {team}</small>}
      </th>
      <td class="status">
        {key.revokedAt === undefined ? <span class="badge state-settled">live</span> : <span class="badge state-refused">revoked</span>}
        {key.revokedAt !== undefined && <small class="key-id">{formatTime(key.revokedAt)}</small>}
      </td>
      <td class="period">{key.period}</td>
      <td class="num spent">{formatCount(key.spentCredits)}</td>
      <td class="num held">{formatCount(key.heldCredits)}</td>
      <td class="limits">
        {limitWords(key)}
        {key.maxOutputTokens !== undefined && <small class="key-id">max_tokens ≤ {formatCount(key.maxOutputTokens)}</small>}
      </td>
      <td class="num refusals">
        {formatCount(refusals.reduce((sum, reason) => sum + (key.rejections[reason] ?? 0), 0))}
        {refusals.map((reason) => (
          <small key={reason} class="key-id">
            {words(reason).replace(/_/g, ' ')}: {formatCount(key.rejections[reason] ?? 0)}
          </small>
        ))}
      </td>
      <td class="models">{key.models === undefined ? 'every model' : key.models.join(', ')}</td>
      <td class="actions">
        {key.revokedAt === undefined && (
          <>
            <button type="button" class="secondary" aria-label={`Change ${key.name}`} onClick={onChange}>
              Change
            </button>
            <button type="button" class="secondary danger" aria-label={`Revoke ${key.name}`} onClick={onRevoke}>
              Revoke
            </button>
          </>
        )}
      </td>
    </tr>
  );
}
