import { SPEND_PERIODS, type SpendPeriod } from '../api/types';
import { Field, listOf, typedNumber } from '../components/forms';
import { formatCredits } from '../format';

/** A spend limit and its alerts as a form edits them (a key's or a team's); empty credits: no limit. */
export interface LimitDraft {
  readonly limitCredits: string;
  readonly limitPeriod: SpendPeriod;
  /** Percentages separated by commas or spaces; empty: no alert. */
  readonly alertAt: string;
}

export const EMPTY_LIMIT_DRAFT: LimitDraft = { limitCredits: '', limitPeriod: 'month', alertAt: '' };

/** What a key or a team sets as its limit, as the API lists it. */
export interface LimitSettings {
  readonly spendLimit?: { readonly credits: number; readonly period: SpendPeriod };
  readonly alertAt?: readonly number[];
}

export function limitDraftOf(settings: LimitSettings): LimitDraft {
  return {
    limitCredits: settings.spendLimit === undefined ? '' : String(settings.spendLimit.credits),
    limitPeriod: settings.spendLimit?.period ?? EMPTY_LIMIT_DRAFT.limitPeriod,
    alertAt: settings.alertAt?.join(', ') ?? '',
  };
}

/** The `spendLimit` and `alertAt` of a request body; an empty field is left out, which removes it on a change. */
export function limitBody(draft: LimitDraft): Record<string, unknown> {
  const alertAt = listOf(draft.alertAt).map(typedNumber);
  return {
    ...(draft.limitCredits.trim() === '' ? {} : { spendLimit: { credits: typedNumber(draft.limitCredits), period: draft.limitPeriod } }),
    ...(alertAt.length === 0 ? {} : { alertAt }),
  };
}

/** How each period reads after a limit's credits, and as a choice in the form. */
const PERIOD_WORDS: Readonly<Record<string, readonly [after: string, choice: string]>> = {
  day: ['a UTC day', 'UTC day'],
  week: ['an ISO week', 'ISO week (from Monday 00:00 UTC)'],
  month: ['a UTC month', 'UTC month'],
  total: ['in total', 'whole life'],
};

/** `a UTC day`, `in total`: how a spend limit's period reads after its credits. */
export const periodWords = (period: SpendPeriod): string => PERIOD_WORDS[period]?.[0] ?? `a ${period}`;

/** `100,000 credits a UTC day, alerts at 50 % and 90 %`, or `no spend limit`. */
export function limitWords({ spendLimit, alertAt }: LimitSettings): string {
  if (spendLimit === undefined) return 'no spend limit';
  const alerts = alertAt === undefined || alertAt.length === 0 ? '' : `, alerts at ${alertAt.map((percent) => `${percent} %`).join(', ')}`;
  return `${formatCredits(spendLimit.credits)} ${periodWords(spendLimit.period)}${alerts}`;
}

/** The fields of a spend limit and its alerts, `whose` naming what they limit (`the key`, `the team`). */
export function LimitFields({ id, draft, setDraft, whose }: { id: string; draft: LimitDraft; setDraft: (draft: LimitDraft) => void; whose: string }) {
  return (
    <>
      <Field id={`${id}-limit`} label="Spend limit (credits)" hint={`Charged plus held by ${whose}, per period; empty: no limit.`}>
        <input id={`${id}-limit`} inputMode="numeric" value={draft.limitCredits} onInput={(e) => setDraft({ ...draft, limitCredits: e.currentTarget.value })} aria-describedby={`${id}-limit-hint`} />
      </Field>
      <Field id={`${id}-period`} label="Limit period">
        <select id={`${id}-period`} value={draft.limitPeriod} onChange={(e) => setDraft({ ...draft, limitPeriod: e.currentTarget.value as SpendPeriod })}>
          {SPEND_PERIODS.map((period) => (
            <option key={period} value={period}>
              {PERIOD_WORDS[period]?.[1] ?? period}
            </option>
          ))}
        </select>
      </Field>
      <Field id={`${id}-alerts`} label="Alert at (% of the limit)" hint="Separated by commas, e.g. 50, 90: recorded once per period when the charges reach it, and sent to the webhooks subscribed.">
        <input id={`${id}-alerts`} value={draft.alertAt} onInput={(e) => setDraft({ ...draft, alertAt: e.currentTarget.value })} aria-describedby={`${id}-alerts-hint`} />
      </Field>
    </>
  );
}
