import fc from 'fast-check';
import { MAX_ACCOUNT_TOTAL_CREDITS, MAX_HOLD_OVERRUN_CREDITS, MAX_LEDGER_ENTRY_CREDITS } from '../../src/accounts/account.bounds';
import type { AccountCommand } from '../../src/accounts/account.commands';
import { accountDecider } from '../../src/accounts/account.decider';
import type { AccountEvent } from '../../src/accounts/account.events';
import { balanceOf, type AccountState } from '../../src/accounts/account.state';
import { MAX_CREDIT_HOLD_CREDITS } from '../../src/catalog/publication.validation';
import { AdmissionRefusedError } from '../../src/accounts/admission.policy';
import { DomainError, ValidationError } from '../../src/domain/domain.errors';
import { adjust, adjusted, grant, granted, holdPlaced, holdSettled, placeHold, settingsChanged, settleHold } from './account.fixtures';

const B = MAX_ACCOUNT_TOTAL_CREDITS;
const BIG_B = BigInt(B);

/**
 * A reachable account near the bound, as one fold standing for many commands: `granted` is a sum of
 * grants, `adjustments` of adjustments, and `charged` of invocations each charged its own hold (so
 * charged never passes what was credited, as admission guarantees).
 */
const start: fc.Arbitrary<AccountState> = fc
  .record({
    granted: fc.oneof(fc.constant(B), fc.integer({ min: B - 3 * MAX_LEDGER_ENTRY_CREDITS, max: B }), fc.integer({ min: 0, max: B })),
    adjustmentShare: fc.oneof(fc.constant(0), fc.double({ min: -1, max: 1, noNaN: true })),
    chargedShare: fc.oneof(fc.constant(0), fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
  })
  .map(({ granted: g, adjustmentShare, chargedShare }) => {
    // Adjustments between taking back everything granted and filling the range up.
    const a = adjustmentShare < 0 ? Math.round(adjustmentShare * g) : Math.round(adjustmentShare * (B - g));
    const c = Math.floor(chargedShare * (g + a));
    const events: AccountEvent[] = [granted(g, 'grants'), settingsChanged(true, 1_000)];
    if (a !== 0) events.push(adjusted(a, 'adjustments'));
    if (c > 0) events.push(holdPlaced('charged', c), holdSettled('charged', c, c));
    return events.reduce(accountDecider.evolve, accountDecider.initialState());
  });

/** A command before it meets a state: its kind, the invocation it names, and its size as a share of its bound. */
interface Intent {
  readonly kind: 'grant' | 'adjust-up' | 'adjust-down' | 'hold' | 'settle';
  readonly invocation: number;
  readonly share: number;
}

const share = fc.oneof(fc.constant(0), fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1e-9, noNaN: true }));
const intent: fc.Arbitrary<Intent> = fc.record({
  kind: fc.constantFrom('grant', 'adjust-up', 'adjust-down', 'hold', 'settle'),
  invocation: fc.integer({ min: 0, max: 7 }),
  share,
});

/** Every command an account takes, at sizes that reach the bound; a settlement charges up to its hold plus the overrun room. */
function commandOf({ kind, invocation, share: part }: Intent, state: AccountState, step: number): AccountCommand {
  const sized = (max: number): number => Math.floor(part * max);
  const id = `inv-${invocation}`;
  switch (kind) {
    case 'grant':
      return grant(Math.max(1, sized(MAX_LEDGER_ENTRY_CREDITS)), `grant-${step}`);
    case 'adjust-up':
      return adjust(Math.max(1, sized(MAX_LEDGER_ENTRY_CREDITS)), `adjust-${step}`);
    case 'adjust-down':
      return adjust(-Math.max(1, sized(MAX_LEDGER_ENTRY_CREDITS)), `adjust-${step}`);
    case 'hold':
      return placeHold(id, sized(MAX_CREDIT_HOLD_CREDITS));
    case 'settle':
      return settleHold(id, sized((state.openHolds.get(id)?.credits ?? 0) + MAX_HOLD_OVERRUN_CREDITS));
  }
}

/** Throws unless every figure is a safe integer, `available` is the exact difference, and the sums lie within ±bound. */
function exactlyInRange(state: AccountState): void {
  const balance = balanceOf(state);
  const exactAvailable = BigInt(balance.granted) + BigInt(balance.adjustments) - BigInt(balance.charged) - BigInt(balance.held);
  const credited = BigInt(balance.granted) + BigInt(balance.adjustments);
  const exact =
    [balance.granted, balance.adjustments, balance.charged, balance.held, balance.available].every(Number.isSafeInteger) &&
    BigInt(balance.available) === exactAvailable &&
    [exactAvailable, credited].every((figure) => figure <= BIG_B && figure >= -BIG_B);
  // One expect per failure only: the runs check this hundreds of thousands of times.
  if (!exact) expect(balance).toBe('a balance whose every figure is exact and within the range');
}

/** The commands that take money away: each must be accepted from `state`. */
function moneyReducing(state: AccountState, pick: number): AccountCommand[] {
  const reducing: AccountCommand[] = [];
  for (const [id, hold] of state.openHolds) {
    reducing.push(settleHold(id, 0), settleHold(id, hold.credits), settleHold(id, hold.credits + MAX_HOLD_OVERRUN_CREDITS));
  }
  // A negative adjustment that takes back no more than the account was credited.
  const credited = state.granted + state.adjustments;
  const back = Math.min(MAX_LEDGER_ENTRY_CREDITS, credited, 1 + (pick % MAX_LEDGER_ENTRY_CREDITS));
  if (back >= 1) reducing.push(adjust(-back, `take-back-${back}`), adjust(-Math.min(MAX_LEDGER_ENTRY_CREDITS, credited), 'take-back-most'));
  return reducing;
}

describe('finding 1 of issue 24, as a property: no command leaves a total outside the exact-integer range, and money-reducing commands always succeed (docs/http.md)', () => {
  it('from any reachable account state, settlements and negative adjustments are accepted, and every step stays exact', () => {
    // How often the runs met the bound, so the property is not vacuously true far from it.
    const met = { holdsRefusedAtTheBound: 0, creditsRefusedAtTheBound: 0 };
    fc.assert(
      fc.property(start, fc.array(fc.tuple(intent, fc.nat()), { minLength: 1, maxLength: 50 }), (initial, steps) => {
        let state = initial;
        exactlyInRange(state);
        steps.forEach(([next, pick], step) => {
          for (const reducing of moneyReducing(state, pick)) {
            const after = accountDecider.decide(reducing, state).reduce(accountDecider.evolve, state);
            exactlyInRange(after);
          }
          const cmd = commandOf(next, state, step);
          let events: readonly AccountEvent[] = [];
          try {
            events = accountDecider.decide(cmd, state);
          } catch (error) {
            expect(error).toBeInstanceOf(DomainError);
            // A hold that does not fit is an admission refusal (recorded as transition 2), never bad input.
            if (cmd.type === 'PlaceHold') expect(error).not.toBeInstanceOf(ValidationError);
            if (error instanceof AdmissionRefusedError && error.refusal.reason === 'ledger_totals_bound') met.holdsRefusedAtTheBound += 1;
            if (error instanceof ValidationError && error.field === 'credits') met.creditsRefusedAtTheBound += 1;
          }
          state = events.reduce(accountDecider.evolve, state);
          exactlyInRange(state);
        });
      }),
      { numRuns: 200 },
    );
    expect(met.holdsRefusedAtTheBound).toBeGreaterThan(0);
    expect(met.creditsRefusedAtTheBound).toBeGreaterThan(0);
  });

  it('at the bound itself: a hold is refused with ledger_totals_bound, a grant as bad input naming credits, and a credit taken back is accepted', () => {
    const full = [granted(B, 'all'), holdPlaced('charged', B - MAX_HOLD_OVERRUN_CREDITS), holdSettled('charged', B - MAX_HOLD_OVERRUN_CREDITS, B - MAX_HOLD_OVERRUN_CREDITS)].reduce(
      accountDecider.evolve,
      accountDecider.initialState(),
    );
    expect(() => accountDecider.decide(placeHold('inv-1', 1), full)).toThrow(expect.objectContaining({ refusal: expect.objectContaining({ reason: 'ledger_totals_bound' }) }));
    expect(() => accountDecider.decide(grant(1, 'one-more'), full)).toThrow(expect.objectContaining({ name: 'ValidationError', field: 'credits' }));
    expect(accountDecider.decide(adjust(-1, 'one-less'), full)).toEqual([adjusted(-1, 'one-less')]);
  });
});
