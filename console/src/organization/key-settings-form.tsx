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
}

export const EMPTY_KEY_DRAFT: KeyDraft = { name: '', models: '', maxOutputTokens: '', teamId: '', ...EMPTY_LIMIT_DRAFT };

/** The form's starting point for changing `key`: its settings as they are. */
export function draftOfKey(key: GatewayKey): KeyDraft {
  return {
    name: key.name,
    models: key.models?.join(', ') ?? '',
    maxOutputTokens: key.maxOutputTokens === undefined ? '' : String(key.maxOutputTokens),
    teamId: key.teamId ?? '',
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
    ...(draft.maxOutputTokens.trim() === '' ? {} : { maxOutputTokens: typedNumber(draft.maxOutputTokens) }),
    ...limitBody(draft),
    ...(draft.teamId === '' ? {} : { teamId: draft.teamId }),
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

/** The settings of a key to issue or change: name, models, largest `max_tokens`, team, spend limit and alerts. */
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
    </SettingsForm>
  );
}
