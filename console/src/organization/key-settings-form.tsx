import type { GatewayKey, GatewayTeam } from '../api/types';
import { Field, listOf, SettingsForm, typedNumber } from '../components/forms';
import { EMPTY_LIMIT_DRAFT, limitBody, limitDraftOf, LimitFields, type LimitDraft } from './limit-fields';
import type { Writing } from '../api/use-writes';

/** A key's settings as the form edits them: each field as typed, an empty one meaning "none". */
export interface KeyDraft extends LimitDraft {
  readonly name: string;
  /** Model names separated by commas or spaces; empty: every model on the rate card. */
  readonly models: string;
  readonly maxOutputTokens: string;
  /** Empty: no team. */
  readonly teamId: string;
  /** `YYYY-MM-DDTHH:MM`, a UTC minute; empty: the key never expires. */
  readonly expiresAt: string;
  readonly maxConcurrent: string;
  readonly requestsPerMinute: string;
  readonly tokensPerMinute: string;
}

/** The key's whole numbers the form edits, each optional (empty: no cap). */
const KEY_NUMBERS = ['maxOutputTokens', 'maxConcurrent', 'requestsPerMinute', 'tokensPerMinute'] as const;

export const EMPTY_KEY_DRAFT: KeyDraft = { name: '', models: '', maxOutputTokens: '', teamId: '', expiresAt: '', maxConcurrent: '', requestsPerMinute: '', tokensPerMinute: '', ...EMPTY_LIMIT_DRAFT };

/** A UTC minute as typed (`2026-12-31T23:59`) as ISO-8601; anything else as typed, for the service to name. */
const utcInstant = (text: string): string => (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(text.trim()) ? `${text.trim()}:00Z` : text);

/** The form's starting point for changing `key`: its settings as they are. */
export function draftOfKey(key: GatewayKey): KeyDraft {
  return {
    name: key.name,
    models: key.models?.join(', ') ?? '',
    ...(Object.fromEntries(KEY_NUMBERS.map((field) => [field, key[field] === undefined ? '' : String(key[field])])) as Pick<KeyDraft, (typeof KEY_NUMBERS)[number]>),
    teamId: key.teamId ?? '',
    expiresAt: key.expiresAt?.slice(0, 16) ?? '',
    ...limitDraftOf(key),
  };
}

/**
 * The body of `POST …/gateway-keys` or `PATCH …/gateway-keys/:keyId` from the draft. A change replaces
 * the key's settings whole, so every field the form shows is sent, and an empty one removes its cap.
 * The console checks nothing the API does not: what is typed is sent for the service to judge.
 */
export function keySettingsBody(draft: KeyDraft): Record<string, unknown> {
  const models = listOf(draft.models);
  return {
    name: draft.name,
    ...(models.length === 0 ? {} : { models }),
    ...Object.fromEntries(KEY_NUMBERS.filter((field) => draft[field].trim() !== '').map((field) => [field, typedNumber(draft[field])])),
    ...limitBody(draft),
    ...(draft.teamId === '' ? {} : { teamId: draft.teamId }),
    ...(draft.expiresAt.trim() === '' ? {} : { expiresAt: utcInstant(draft.expiresAt) }),
  };
}

export interface KeySettingsFormProps {
  /** Prefix of the fields' ids, unique on the page. */
  readonly id: string;
  readonly label: string;
  readonly draft: KeyDraft;
  readonly setDraft: (draft: KeyDraft) => void;
  /** The organization's teams, to choose the key's from. */
  readonly teams: readonly GatewayTeam[];
  readonly submitLabel: string;
  readonly writing: Writing;
  readonly onSubmit: () => void;
  readonly onCancel: () => void;
}

/** Its expiry and its rate limits: calls in flight, calls and tokens per UTC minute. */
function KeyRateFields({ id, draft, setDraft }: { id: string; draft: KeyDraft; setDraft: (draft: KeyDraft) => void }) {
  const numberField = (field: 'maxConcurrent' | 'requestsPerMinute' | 'tokensPerMinute', label: string, hint: string) => (
    <Field id={`${id}-${field}`} label={label} hint={hint}>
      <input id={`${id}-${field}`} inputMode="numeric" value={draft[field]} onInput={(e) => setDraft({ ...draft, [field]: e.currentTarget.value })} aria-describedby={`${id}-${field}-hint`} />
    </Field>
  );
  return (
    <>
      <Field id={`${id}-expires`} label="Expires at (UTC)" hint="Empty: never. From then on the key is refused (401).">
        <input id={`${id}-expires`} type="datetime-local" value={draft.expiresAt} onInput={(e) => setDraft({ ...draft, expiresAt: e.currentTarget.value })} aria-describedby={`${id}-expires-hint`} />
      </Field>
      {numberField('maxConcurrent', 'Calls in flight at once', 'Empty: only the organization’s running calls bound it.')}
      {numberField('requestsPerMinute', 'Calls per minute', 'Admitted in one UTC minute; empty: no limit.')}
      {numberField('tokensPerMinute', 'Tokens per minute', 'Each call holds its worst case until settled; empty: no limit.')}
    </>
  );
}

/** The settings of a key to issue or change: name, models, largest `max_tokens`, team, spend limit and alerts, expiry, rate limits. */
export function KeySettingsForm({ id, draft, setDraft, teams, ...form }: KeySettingsFormProps) {
  return (
    <SettingsForm {...form}>
      <Field id={`${id}-name`} label="Name">
        <input id={`${id}-name`} required value={draft.name} onInput={(e) => setDraft({ ...draft, name: e.currentTarget.value })} />
      </Field>
      <Field id={`${id}-models`} label="Models" hint="Separated by commas; empty: every model on the rate card.">
        <input id={`${id}-models`} value={draft.models} onInput={(e) => setDraft({ ...draft, models: e.currentTarget.value })} aria-describedby={`${id}-models-hint`} />
      </Field>
      <Field id={`${id}-max-output`} label="Largest max_tokens" hint="Empty: the rate card’s cap alone.">
        <input id={`${id}-max-output`} inputMode="numeric" value={draft.maxOutputTokens} onInput={(e) => setDraft({ ...draft, maxOutputTokens: e.currentTarget.value })} aria-describedby={`${id}-max-output-hint`} />
      </Field>
      <Field id={`${id}-team`} label="Team" hint="Its calls count against the team’s limit too.">
        <select id={`${id}-team`} value={draft.teamId} onChange={(e) => setDraft({ ...draft, teamId: e.currentTarget.value })} aria-describedby={`${id}-team-hint`}>
          <option value="">no team</option>
          {teams.map((team) => (
            <option key={team.teamId} value={team.teamId}>
              {team.name}
            </option>
          ))}
        </select>
      </Field>
      <LimitFields id={id} draft={draft} setDraft={(limit) => setDraft({ ...draft, ...limit })} whose="the key" />
      <KeyRateFields id={id} draft={draft} setDraft={setDraft} />
    </SettingsForm>
  );
}
