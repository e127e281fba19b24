import { useState } from 'preact/hooks';
import { segment } from '../api/client';
import { type GatewayKey, type GatewayTeam, type IssuedGatewayKey } from '../api/types';
import { useApi } from '../api/use-api';
import { Section, Show } from '../components/common';
import { Confirmation, Field, ManagedTable, SettingsForm, TaskRow, typedNumber, type Column } from '../components/forms';
import { useSession } from '../session/session';
import { GatewayTeamsSection } from './gateway-teams-section';
import { IssuedKeyNotice } from './issued-key-notice';
import { draftOfKey, EMPTY_KEY_DRAFT, keySettingsBody, KeySettingsForm, type KeyDraft } from './key-settings-form';
import { KeyRow, type KeyActions } from './key-row';
import { useWrites } from '../api/use-writes';

/** The roles `GET …/gateway-keys` and `GET …/teams` answer (docs/gateway.md); for the others the sections are not shown. */
export const KEY_READERS: ReadonlySet<string> = new Set(['system', 'org_admin']);

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

/** What the keys section is doing besides listing: issuing a key, changing or rotating one, or asking to confirm a revocation. */
type KeyTask = { readonly kind: 'issue' } | { readonly kind: 'change' | 'rotate' | 'revoke'; readonly keyId: string };

function useKeyWrites(organizationId: string, onWritten: () => void) {
  const { api } = useSession();
  const writes = useWrites<KeyTask, KeyDraft>(EMPTY_KEY_DRAFT, onWritten);
  const [issued, setIssued] = useState<NewSecret | undefined>(undefined);
  const keysPath = `/v1/organizations/${segment(organizationId)}/gateway-keys`;
  return {
    ...writes,
    issued,
    forgetIssued: () => setIssued(undefined),
    issue: (draft: KeyDraft) => writes.write('issue the key', () => api.send<IssuedGatewayKey>('POST', keysPath, keySettingsBody(draft)), (key) => setIssued({ key, rotated: false })),
    rotate: (keyId: string, graceSeconds: string) =>
      writes.write('rotate the key', () => api.send<IssuedGatewayKey>('POST', `${keysPath}/${segment(keyId)}/rotate`, { graceSeconds: typedNumber(graceSeconds) }), (key) => setIssued({ key, rotated: true })),
    change: (keyId: string, draft: KeyDraft) => writes.write('change the key', () => api.send('PATCH', `${keysPath}/${segment(keyId)}`, keySettingsBody(draft))),
    revoke: (keyId: string) => writes.write('revoke the key', () => api.send('DELETE', `${keysPath}/${segment(keyId)}`)),
  };
}

type KeyWrites = ReturnType<typeof useKeyWrites>;

/** A secret the service just made, to show once: a new key's, or a rotated key's new one. */
interface NewSecret {
  readonly key: IssuedGatewayKey;
  readonly rotated: boolean;
}

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
      {writes.issued !== undefined && <IssuedKeyNotice issued={writes.issued.key} rotated={writes.issued.rotated} onDone={writes.forgetIssued} />}
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

/** A key's row, and under it the form that changes or rotates it, or the question that confirms its revocation. */
function KeyRows({ gatewayKey: key, forms }: { gatewayKey: GatewayKey; forms: KeyForms }) {
  const { writes, teams } = forms;
  const task = writes.task !== undefined && writes.task.kind !== 'issue' && writes.task.keyId === key.keyId ? writes.task.kind : undefined;
  const actions: KeyActions = {
    onChange: () => writes.open({ kind: 'change', keyId: key.keyId }, draftOfKey(key)),
    onRotate: () => writes.open({ kind: 'rotate', keyId: key.keyId }),
    onRevoke: () => writes.open({ kind: 'revoke', keyId: key.keyId }),
  };
  return (
    <>
      <KeyRow gatewayKey={key} team={teams.find((team) => team.teamId === key.teamId)?.name ?? key.teamId} actions={actions} />
      {task !== undefined && <TaskRow columns={KEY_COLUMNS.length + 1}>{task === 'change' ? <ChangeKeyForm gatewayKey={key} forms={forms} /> : task === 'rotate' ? <RotateKeyForm gatewayKey={key} writes={writes} /> : <RevokeKeyQuestion gatewayKey={key} writes={writes} />}</TaskRow>}
    </>
  );
}

function ChangeKeyForm({ gatewayKey: key, forms: { writes, teams } }: { gatewayKey: GatewayKey; forms: KeyForms }) {
  return (
    <KeySettingsForm
      id={`change-key-${key.keyId}`}
      label={`Change the key “${key.name}”`}
      draft={writes.draft}
      setDraft={writes.setDraft}
      teams={teams}
      submitLabel="Save the key"
      writing={writes.writing}
      onSubmit={() => void writes.change(key.keyId, writes.draft)}
      onCancel={() => writes.open(undefined)}
    />
  );
}

/** Seconds the secret before a rotation keeps working, as the form starts: an hour for its callers to move. */
const DEFAULT_GRACE_SECONDS = '3600';

function RotateKeyForm({ gatewayKey: key, writes }: { gatewayKey: GatewayKey; writes: KeyWrites }) {
  const [grace, setGrace] = useState(DEFAULT_GRACE_SECONDS);
  const id = `rotate-key-${key.keyId}`;
  return (
    <SettingsForm label={`Rotate the key “${key.name}”`} submitLabel="Rotate the secret" writing={writes.writing} onSubmit={() => void writes.rotate(key.keyId, grace)} onCancel={() => writes.open(undefined)}>
      <Field id={`${id}-grace`} label="Grace (seconds)" hint="How long the current secret keeps working beside the new one; 0: it stops now. Same key id, spend and limits.">
        <input id={`${id}-grace`} inputMode="numeric" value={grace} onInput={(e) => setGrace(e.currentTarget.value)} aria-describedby={`${id}-grace-hint`} />
      </Field>
    </SettingsForm>
  );
}

function RevokeKeyQuestion({ gatewayKey: key, writes }: { gatewayKey: GatewayKey; writes: KeyWrites }) {
  return (
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
  );
}
