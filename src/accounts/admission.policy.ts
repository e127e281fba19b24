/**
 * Admission (SPEC §3) as pure functions: the account's own checks (`admit`) and the full order with
 * the catalog's (`decideAdmission`). Each refusal carries the figures an explanation shows.
 */
import type { Publication } from '../catalog/operation.events';
import { DomainError } from '../domain/domain.errors';
import { AccountState, availableCredits, runningCount } from './account.state';

/** Refusals of the access check: SPEC §4 transition 1. */
export const ACCESS_REFUSAL_REASONS = ['ai_disabled', 'operation_disabled', 'unknown_operation'] as const;
/** Refusals for want of credits or a slot: SPEC §4 transition 2. */
export const CAPACITY_REFUSAL_REASONS = ['insufficient_credits', 'no_running_slot'] as const;
export const ADMISSION_REFUSAL_REASONS = [...ACCESS_REFUSAL_REASONS, ...CAPACITY_REFUSAL_REASONS] as const;
export type AdmissionRefusalReason = (typeof ADMISSION_REFUSAL_REASONS)[number];

/** A refusal and the figures behind it, as recorded in InvocationRefused. Plain JSON. */
export type AdmissionRefusal =
  | { readonly reason: 'ai_disabled'; readonly figures: { readonly aiEnabled: false } }
  | { readonly reason: 'unknown_operation'; readonly figures: { readonly publishedVersions: 0 } }
  | { readonly reason: 'operation_disabled'; readonly figures: { readonly version: number; readonly enabled: false } }
  | { readonly reason: 'insufficient_credits'; readonly figures: { readonly available: number; readonly creditHold: number } }
  | { readonly reason: 'no_running_slot'; readonly figures: { readonly running: number; readonly maxRunning: number } };

/** The refusals an account can decide alone. */
export type AccountRefusal = Extract<AdmissionRefusal, { reason: 'ai_disabled' | 'insufficient_credits' | 'no_running_slot' }>;

export type AdmissionDecision = { readonly admitted: true } | ({ readonly admitted: false } & AdmissionRefusal);
export type AccountAdmission = { readonly admitted: true } | ({ readonly admitted: false } & AccountRefusal);

/**
 * The account's checks, in SPEC §3 order: the organization switch, then credits (`available <
 * creditHold`; exactly enough is enough), then a slot (`running >= maxRunning`).
 */
export function admit(state: AccountState, { creditHold }: { readonly creditHold: number }): AccountAdmission {
  if (!state.aiEnabled) return { admitted: false, reason: 'ai_disabled', figures: { aiEnabled: false } };
  const available = availableCredits(state);
  if (available < creditHold) {
    return { admitted: false, reason: 'insufficient_credits', figures: { available, creditHold } };
  }
  const running = runningCount(state);
  if (running >= state.maxRunning) {
    return { admitted: false, reason: 'no_running_slot', figures: { running, maxRunning: state.maxRunning } };
  }
  return { admitted: true };
}

/**
 * The whole of SPEC §3 for a request resolved against `publication` (undefined when the operation was
 * never published), first refusal wins:
 * 1. `ai_disabled` — the organization's switch comes first: an organization with AI off is told so
 *    whatever it asked for, and learns nothing about the catalog;
 * 2. `unknown_operation`, then `operation_disabled` — these two exclude each other (an unknown
 *    operation has no switch), so their order only fixes which check reads first;
 * 3. `insufficient_credits`; 4. `no_running_slot`.
 */
export function decideAdmission(account: AccountState, publication: Publication | undefined): AdmissionDecision {
  if (!account.aiEnabled) return { admitted: false, reason: 'ai_disabled', figures: { aiEnabled: false } };
  if (publication === undefined) {
    return { admitted: false, reason: 'unknown_operation', figures: { publishedVersions: 0 } };
  }
  if (!publication.enabled) {
    return { admitted: false, reason: 'operation_disabled', figures: { version: publication.version, enabled: false } };
  }
  return admit(account, { creditHold: publication.creditHold });
}

/** PlaceHold refused because the account cannot admit it now; carries the refusal to record. */
export class AdmissionRefusedError extends DomainError {
  override readonly name = 'AdmissionRefusedError';

  constructor(readonly refusal: AccountRefusal) {
    super('admission_refused', `admission refused: ${refusal.reason} ${JSON.stringify(refusal.figures)}`);
  }
}

/** The refusal of a refused decision, without the `admitted` flag: what InvocationRefused records. */
export function refusalOf<R extends AdmissionRefusal>(decision: { readonly admitted: false } & R): R {
  return { reason: decision.reason, figures: decision.figures } as R;
}
