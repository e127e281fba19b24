import { useState } from 'preact/hooks';
import { describeWriteError, segment } from '../api/client';
import { GATEWAY_REJECTION_REASONS, type GatewayKey, type IssuedGatewayKey } from '../api/types';
import { useApi } from '../api/use-api';
import { Section, Show, TableScroll } from '../components/common';
import { formatCount, formatCredits, formatTime, words } from '../format';
import { useSession } from '../session/session';
import { IssuedKeyNotice } from './issued-key-notice';
import { draftOfKey, EMPTY_KEY_DRAFT, keySettingsBody, KeySettingsForm, periodWords, type KeyDraft } from './key-settings-form';

/** The roles `GET …/gateway-keys` answers (docs/gateway.md); for the others the section is not shown. */
const KEY_READERS: ReadonlySet<string> = new Set(['system', 'org_admin']);

/** Columns of the keys table, for a row that spans them all (a form under its key). */
const KEY_COLUMNS = 9;

/** An organization's gateway keys, with what each spent in its period and what its calls hold, for the roles that may read them. */
export function GatewayKeysSection({ organizationId }: { organizationId: string }) {
  const { me } = useSession();
  if (!KEY_READERS.has(me.role)) return null;
  return <GatewayKeys organizationId={organizationId} />;
}

/** What the section is doing besides listing: issuing a key, changing one, or asking to confirm a revocation. */
type Task = { readonly kind: 'issue' } | { readonly kind: 'change' | 'revoke'; readonly keyId: string } | undefined;

/** A write in flight or refused, for the form or confirmation that sent it. */
interface Writing {
  readonly busy: boolean;
  readonly error?: string;
}

function useKeyWrites(organizationId: string) {
  const { api } = useSession();
  const [refresh, setRefresh] = useState(0);
  const [task, setTask] = useState<Task>(undefined);
  const [writing, setWriting] = useState<Writing>({ busy: false });
  const [issued, setIssued] = useState<IssuedGatewayKey | undefined>(undefined);
  const keysPath = `/v1/organizations/${segment(organizationId)}/gateway-keys`;
  /** Sends one write; on success closes the task and reads the keys again, on refusal says why beside the form. */
  const write = async <T,>(what: string, send: () => Promise<T>, then: (answer: T) => void = () => undefined) => {
    setWriting({ busy: true });
    try {
      then(await send());
      setTask(undefined);
      setWriting({ busy: false });
      setRefresh((count) => count + 1);
    } catch (error: unknown) {
      setWriting({ busy: false, error: describeWriteError(error, what) });
    }
  };
  const open = (next: Task) => {
    setTask(next);
    setWriting({ busy: false });
  };
  return {
    keys: useApi<{ keys: GatewayKey[] }>(keysPath, refresh),
    task,
    open,
    writing,
    issued,
    forgetIssued: () => setIssued(undefined),
    issue: (draft: KeyDraft) => write('issue the key', () => api.send<IssuedGatewayKey>('POST', keysPath, keySettingsBody(draft)), setIssued),
    change: (keyId: string, draft: KeyDraft) => write('change the key', () => api.send('PATCH', `${keysPath}/${segment(keyId)}`, keySettingsBody(draft))),
    revoke: (keyId: string) => write('revoke the key', () => api.send('DELETE', `${keysPath}/${segment(keyId)}`)),
  };
}

type KeyWrites = ReturnType<typeof useKeyWrites>;

function GatewayKeys({ organizationId }: { organizationId: string }) {
  const writes = useKeyWrites(organizationId);
  const [draft, setDraft] = useState<KeyDraft>(EMPTY_KEY_DRAFT);
  const issueButton = (
    <button
      type="button"
      onClick={() => {
        setDraft(EMPTY_KEY_DRAFT);
        writes.open({ kind: 'issue' });
      }}
    >
      Issue a key
    </button>
  );
  return (
    <Section id="gateway-keys" title="Gateway keys" actions={issueButton}>
      {writes.issued !== undefined && <IssuedKeyNotice issued={writes.issued} onDone={writes.forgetIssued} />}
      {writes.task?.kind === 'issue' && (
        <KeySettingsForm
          id="issue-key"
          label="Issue a gateway key"
          draft={draft}
          setDraft={setDraft}
          submitLabel="Issue the key"
          busy={writes.writing.busy}
          error={writes.writing.error}
          onSubmit={() => void writes.issue(draft)}
          onCancel={() => writes.open(undefined)}
        />
      )}
      <Show loaded={writes.keys} what="the gateway keys">
        {({ keys: list }) =>
          list.length === 0 ? <p class="muted">No gateway keys were issued for this organization.</p> : <KeysTable keys={list} writes={writes} draft={draft} setDraft={setDraft} />
        }
      </Show>
    </Section>
  );
}

function KeysTable({ keys, writes, draft, setDraft }: { keys: readonly GatewayKey[]; writes: KeyWrites; draft: KeyDraft; setDraft: (draft: KeyDraft) => void }) {
  return (
    <TableScroll label="Gateway keys table">
      <table class="keys-table">
        <caption class="visually-hidden">Gateway keys, oldest first, with their status and their spend in the current period</caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Status</th>
            <th scope="col">Period</th>
            <th scope="col" class="num">Spent</th>
            <th scope="col" class="num">Held</th>
            <th scope="col">Limits</th>
            <th scope="col" class="num">Refusals</th>
            <th scope="col">Models</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => (
            <KeyRows key={key.keyId} gatewayKey={key} writes={writes} draft={draft} setDraft={setDraft} />
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/** A key's row, and under it the form that changes it or the question that confirms its revocation. */
function KeyRows({ gatewayKey: key, writes, draft, setDraft }: { gatewayKey: GatewayKey; writes: KeyWrites; draft: KeyDraft; setDraft: (draft: KeyDraft) => void }) {
  const task = writes.task !== undefined && writes.task.kind !== 'issue' && writes.task.keyId === key.keyId ? writes.task.kind : undefined;
  return (
    <>
      <KeyRow
        gatewayKey={key}
        onChange={() => {
          setDraft(draftOfKey(key));
          writes.open({ kind: 'change', keyId: key.keyId });
        }}
        onRevoke={() => writes.open({ kind: 'revoke', keyId: key.keyId })}
      />
      {task === 'change' && (
        <tr class="task-row">
          <td colSpan={KEY_COLUMNS}>
            <KeySettingsForm
              id={`change-key-${key.keyId}`}
              label={`Change the key “${key.name}”`}
              draft={draft}
              setDraft={setDraft}
              submitLabel="Save the key"
              busy={writes.writing.busy}
              error={writes.writing.error}
              onSubmit={() => void writes.change(key.keyId, draft)}
              onCancel={() => writes.open(undefined)}
            />
          </td>
        </tr>
      )}
      {task === 'revoke' && (
        <tr class="task-row">
          <td colSpan={KEY_COLUMNS}>
            <RevokeConfirmation name={key.name} writing={writes.writing} onConfirm={() => void writes.revoke(key.keyId)} onCancel={() => writes.open(undefined)} />
          </td>
        </tr>
      )}
    </>
  );
}

function KeyRow({ gatewayKey: key, onChange, onRevoke }: { gatewayKey: GatewayKey; onChange: () => void; onRevoke: () => void }) {
  const refusals = GATEWAY_REJECTION_REASONS.filter((reason) => (key.rejections[reason] ?? 0) > 0);
  return (
    <tr>
      <th scope="row">
        {key.name}
        <small class="key-id">
          <code class="id">{key.keyId}</code> issued {formatTime(key.issuedAt)}
        </small>
      </th>
      <td class="status">
        {key.revokedAt === undefined ? <span class="badge state-settled">live</span> : <span class="badge state-refused">revoked</span>}
        {key.revokedAt !== undefined && <small class="key-id">{formatTime(key.revokedAt)}</small>}
      </td>
      <td class="period">{key.period}</td>
      <td class="num spent">{formatCount(key.spentCredits)}</td>
      <td class="num held">{formatCount(key.heldCredits)}</td>
      <td class="limits">
        {key.spendLimit === undefined ? 'no spend limit' : `${formatCredits(key.spendLimit.credits)} ${periodWords(key.spendLimit.period)}`}
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

function RevokeConfirmation({ name, writing, onConfirm, onCancel }: { name: string; writing: Writing; onConfirm: () => void; onCancel: () => void }) {
  return (
    <div class="confirm" role="group" aria-label={`Revoke the key “${name}”?`}>
      <p>
        <strong>Revoke the key “{name}”?</strong> Every instance refuses it from the next call on, and a revoked key
        cannot be brought back: its callers will need a new key.
      </p>
      <div class="form-actions">
        <button type="button" class="danger" disabled={writing.busy} onClick={onConfirm}>
          Revoke “{name}”
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Keep it
        </button>
      </div>
      {writing.error !== undefined && (
        <p class="error" role="alert">
          {writing.error}
        </p>
      )}
    </div>
  );
}
