import { accountDecider } from '../../src/accounts/account.decider';
import { decideAdmission, refusalOf } from '../../src/accounts/admission.policy';
import { replay } from '../../src/domain/decider';
import { IllegalTransitionError, ValidationError } from '../../src/domain/domain.errors';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import { deciderSpec } from '../support/decider-spec';
import { MAX_ACCOUNT_TOTAL_CREDITS, MAX_HOLD_OVERRUN_CREDITS } from '../../src/accounts/account.bounds';
import { granted, holdPlaced, holdSettled, settingsChanged } from '../accounts/account.fixtures';
import { at, estimated, PUBLICATION, refuse, reserve } from './invocation.fixtures';

const spec = deciderSpec(invocationDecider);
const CHARGED_TO_THE_BOUND = MAX_ACCOUNT_TOTAL_CREDITS - MAX_HOLD_OVERRUN_CREDITS;

describe('docs/lifecycle.md each refusal is terminal and recorded with its reason and figures', () => {
  it.each([
    ['ai_disabled', [settingsChanged(false, 10)], PUBLICATION, 1],
    ['operation_disabled', [granted(1_000)], { ...PUBLICATION, enabled: false }, 1],
    ['unknown_operation', [granted(1_000)], null, 1],
    ['insufficient_credits', [granted(499)], PUBLICATION, 2],
    ['no_running_slot', [granted(10_000), settingsChanged(true, 1), holdPlaced('other', 500)], PUBLICATION, 2],
    // Everything granted was charged but less than a hold and its settlement room.
    ['ledger_totals_bound', [granted(MAX_ACCOUNT_TOTAL_CREDITS), holdPlaced('earlier', CHARGED_TO_THE_BOUND), holdSettled('earlier', CHARGED_TO_THE_BOUND, CHARGED_TO_THE_BOUND)], PUBLICATION, 2],
  ] as const)('records %s exactly as decideAdmission gives it, with its transition number', (reason, accountEvents, publication, transition) => {
    const decision = decideAdmission(replay(accountDecider, [...accountEvents]), publication ?? undefined);
    if (decision.admitted) throw new Error('expected a refusal');
    const refusal = refusalOf(decision);
    expect(refusal.reason).toBe(reason);
    const state = spec
      .given([estimated(publication)])
      .when(refuse(refusal))
      .then([{ type: 'InvocationRefused', data: { ...refusal, transition, refusedAt: at(5) } }]);
    expect(state.refusal).toMatchObject({ reason, transition });
  });
});

describe('docs/lifecycle.md a recorded refusal agrees with the publication the invocation copied, so explanations never contradict it', () => {
  it('refuses unknown_operation for a request resolved against a published version', () => {
    spec
      .given([estimated()])
      .when(refuse({ reason: 'unknown_operation', figures: { publishedVersions: 0 } }))
      .thenThrows(ValidationError, { field: 'reason' });
  });

  it('refuses operation_disabled for an enabled publication', () => {
    spec
      .given([estimated()])
      .when(refuse({ reason: 'operation_disabled', figures: { version: 2, enabled: false } }))
      .thenThrows(ValidationError, { field: 'reason' });
  });

  it('refuses insufficient_credits whose figures show the hold fits', () => {
    spec
      .given([estimated()])
      .when(refuse({ reason: 'insufficient_credits', figures: { available: 500, creditHold: 500 } }))
      .thenThrows(ValidationError, { field: 'figures.available' });
  });

  it('refuses insufficient_credits for another hold than the estimate', () => {
    spec
      .given([estimated()])
      .when(refuse({ reason: 'insufficient_credits', figures: { available: 10, creditHold: 400 } }))
      .thenThrows(ValidationError, { field: 'figures.creditHold' });
  });

  it('refuses no_running_slot whose figures leave a slot free', () => {
    spec
      .given([estimated()])
      .when(refuse({ reason: 'no_running_slot', figures: { running: 3, maxRunning: 4 } }))
      .thenThrows(ValidationError, { field: 'figures.running' });
  });

  it('refuses ledger_totals_bound whose figures leave room for the hold', () => {
    const figures = { committedCredits: 0, creditHold: PUBLICATION.creditHold, overrunRoomCredits: MAX_HOLD_OVERRUN_CREDITS, maxTotalCredits: MAX_ACCOUNT_TOTAL_CREDITS };
    spec.given([estimated()]).when(refuse({ reason: 'ledger_totals_bound', figures })).thenThrows(ValidationError, { field: 'figures.committedCredits' });
    spec
      .given([estimated()])
      .when(refuse({ reason: 'ledger_totals_bound', figures: { ...figures, committedCredits: MAX_ACCOUNT_TOTAL_CREDITS, creditHold: 1 } }))
      .thenThrows(ValidationError, { field: 'figures.creditHold' });
  });

  it('refuses an unknown reason', () => {
    spec
      .given([estimated()])
      .when(refuse({ reason: 'too_busy', figures: {} } as never))
      .thenThrows(ValidationError, { field: 'reason' });
  });

  it('refuses to reserve for an operation never published: only transition 1 can follow', () => {
    spec.given([estimated(null)]).when(reserve()).thenThrows(IllegalTransitionError, { state: 'estimated', command: 'ReserveInvocation' });
  });

  it('refuses to reserve for a disabled publication', () => {
    spec.given([estimated({ ...PUBLICATION, enabled: false })]).when(reserve()).thenThrows(IllegalTransitionError);
  });
});
