import type { ComponentChildren } from 'preact';
import { SPEND_PERIODS, type GatewayKey, type SpendPeriod } from '../api/types';

/** A key's settings as the form edits them: each field as typed, an empty one meaning "no cap". */
export interface KeyDraft {
  readonly name: string;
  /** Model names separated by commas or spaces; empty: every model on the rate card. */
  readonly models: string;
  readonly maxOutputTokens: string;
  readonly limitCredits: string;
  readonly limitPeriod: SpendPeriod;
}

export const EMPTY_KEY_DRAFT: KeyDraft = { name: '', models: '', maxOutputTokens: '', limitCredits: '', limitPeriod: 'month' };

/** The form's starting point for changing `key`: its settings as they are. */
export function draftOfKey(key: GatewayKey): KeyDraft {
  return {
    name: key.name,
    models: key.models?.join(', ') ?? '',
    maxOutputTokens: key.maxOutputTokens === undefined ? '' : String(key.maxOutputTokens),
    limitCredits: key.spendLimit === undefined ? '' : String(key.spendLimit.credits),
    limitPeriod: key.spendLimit?.period ?? EMPTY_KEY_DRAFT.limitPeriod,
  };
}

/**
 * A number as typed: a whole number as a number, anything else as the text itself, so the service
 * judges it and names the field (the console checks nothing the API does not).
 */
const typedNumber = (text: string): number | string => (/^\d+$/.test(text.trim()) ? Number(text.trim()) : text);

/**
 * The body of `POST …/gateway-keys` or `PATCH …/gateway-keys/:keyId` from the draft. A change replaces
 * the key's settings whole, so every field the form shows is sent, and an empty one removes its cap.
 */
export function keySettingsBody(draft: KeyDraft): Record<string, unknown> {
  const models = draft.models.split(/[\s,]+/).filter((model) => model !== '');
  return {
    name: draft.name,
    ...(models.length === 0 ? {} : { models }),
    ...(draft.maxOutputTokens.trim() === '' ? {} : { maxOutputTokens: typedNumber(draft.maxOutputTokens) }),
    ...(draft.limitCredits.trim() === '' ? {} : { spendLimit: { credits: typedNumber(draft.limitCredits), period: draft.limitPeriod } }),
  };
}

/** One labelled field of the form. */
function Field({ id, label, hint, children }: { id: string; label: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {hint !== undefined && (
        <small class="muted" id={`${id}-hint`}>
          {hint}
        </small>
      )}
    </div>
  );
}

export interface KeySettingsFormProps {
  /** Prefix of the fields' ids, unique on the page. */
  readonly id: string;
  readonly label: string;
  readonly draft: KeyDraft;
  readonly setDraft: (draft: KeyDraft) => void;
  readonly submitLabel: string;
  readonly busy: boolean;
  readonly error?: string;
  readonly onSubmit: () => void;
  readonly onCancel: () => void;
}

/** The settings of a key to issue or change: name, models, largest `max_tokens`, spend limit. */
export function KeySettingsForm({ id, label, draft, setDraft, submitLabel, busy, error, onSubmit, onCancel }: KeySettingsFormProps) {
  const set = (field: keyof KeyDraft) => (event: { currentTarget: HTMLInputElement | HTMLSelectElement }) => setDraft({ ...draft, [field]: event.currentTarget.value });
  return (
    <form
      class="key-form"
      aria-label={label}
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit();
      }}
    >
      <Field id={`${id}-name`} label="Name">
        <input id={`${id}-name`} required value={draft.name} onInput={set('name')} />
      </Field>
      <Field id={`${id}-models`} label="Models" hint="Separated by commas; empty: every model on the rate card.">
        <input id={`${id}-models`} value={draft.models} onInput={set('models')} aria-describedby={`${id}-models-hint`} />
      </Field>
      <Field id={`${id}-max-output`} label="Largest max_tokens" hint="Empty: the rate card’s cap alone.">
        <input id={`${id}-max-output`} inputMode="numeric" value={draft.maxOutputTokens} onInput={set('maxOutputTokens')} aria-describedby={`${id}-max-output-hint`} />
      </Field>
      <Field id={`${id}-limit`} label="Spend limit (credits)" hint="Charged plus held, per period; empty: no limit but the organization’s credits.">
        <input id={`${id}-limit`} inputMode="numeric" value={draft.limitCredits} onInput={set('limitCredits')} aria-describedby={`${id}-limit-hint`} />
      </Field>
      <Field id={`${id}-period`} label="Per">
        <select id={`${id}-period`} value={draft.limitPeriod} onChange={set('limitPeriod')}>
          {SPEND_PERIODS.map((period) => (
            <option key={period} value={period}>
              {period === 'total' ? 'the key’s whole life' : `UTC ${period}`}
            </option>
          ))}
        </select>
      </Field>
      <div class="form-actions">
        <button type="submit" disabled={busy}>
          {submitLabel}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** `a UTC day`, `in total`: how a spend limit's period reads after its credits. */
export function periodWords(period: SpendPeriod): string {
  return period === 'total' ? 'in total' : `a UTC ${period}`;
}
