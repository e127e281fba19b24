import { accountDecider } from '../../src/accounts/account.decider';
import { accountSnapshot } from '../../src/accounts/account.snapshot';
import { isPast, MAX_ALERT_THRESHOLDS } from '../../src/accounts/credit-alerts';
import { IllegalTransitionError, ValidationError } from '../../src/domain/domain.errors';
import { deciderSpec } from '../support/decider-spec';
import {
  adjust,
  adjusted,
  alertsSet,
  availableBelow,
  granted,
  holdPlaced,
  holdSettled,
  setAlerts,
  settleHold,
  thresholdCrossed,
  usedShareAbove,
} from './account.fixtures';

const spec = deciderSpec(accountDecider);
const settlement = (invocationId: string) => ({ kind: 'settlement' as const, invocationId });

describe('README.md credit alerts: a settlement that crosses a threshold appends CreditThresholdCrossed to the account', () => {
  it('appends it after HoldSettled when the settlement takes available below the threshold, with the figures after it', () => {
    spec
      .given([granted(1_000), alertsSet([availableBelow(300)]), holdPlaced('inv-1', 800)])
      .when(settleHold('inv-1', 750))
      .then([
        holdSettled('inv-1', 800, 750),
        thresholdCrossed(availableBelow(300), { available: 250, charged: 750, grantedCredits: 1_000, usedPercent: 75 }, settlement('inv-1')),
      ]);
  });

  it('appends nothing more for a settlement that leaves available at or above the threshold (below means strictly below)', () => {
    spec
      .given([granted(1_000), alertsSet([availableBelow(300)]), holdPlaced('inv-1', 800)])
      .when(settleHold('inv-1', 700))
      .then([holdSettled('inv-1', 800, 700)]);
  });

  it('reads available with the other holds still open, as admission does', () => {
    spec
      .given([granted(1_000), alertsSet([availableBelow(500)]), holdPlaced('inv-1', 500), holdPlaced('inv-2', 400)])
      .when(settleHold('inv-1', 200))
      .then([
        holdSettled('inv-1', 500, 200),
        thresholdCrossed(availableBelow(500), { available: 1_000 - 200 - 400, charged: 200, grantedCredits: 1_000, usedPercent: 20 }, settlement('inv-1')),
      ]);
  });
});

describe('README.md credit alerts: once per crossing, and again only after it was un-crossed', () => {
  const crossedOnce = [
    granted(1_000),
    alertsSet([availableBelow(300)]),
    holdPlaced('inv-1', 800),
    holdSettled('inv-1', 800, 750),
    thresholdCrossed(availableBelow(300), { available: 250, charged: 750, grantedCredits: 1_000, usedPercent: 75 }, settlement('inv-1')),
  ];

  it('does not append it again for a later settlement while available stays below', () => {
    spec
      .given([...crossedOnce, holdPlaced('inv-2', 100)])
      .when(settleHold('inv-2', 100))
      .then([holdSettled('inv-2', 100, 100)]);
  });

  it('appends it again after a grant brought available back above and a settlement took it below once more', () => {
    spec
      .given([...crossedOnce, granted(1_000, 'grant-2'), holdPlaced('inv-2', 1_100)])
      .when(settleHold('inv-2', 1_000))
      .then([
        holdSettled('inv-2', 1_100, 1_000),
        thresholdCrossed(availableBelow(300), { available: 250, charged: 1_750, grantedCredits: 2_000, usedPercent: 87 }, settlement('inv-2')),
      ]);
  });

  it('forgets the crossing once a grant brings available back to the threshold or above, and not before', () => {
    expect(spec.given([...crossedOnce, granted(49, 'grant-2')]).state().crossedThresholds.size).toBe(1);
    expect(spec.given([...crossedOnce, granted(50, 'grant-2')]).state().crossedThresholds.size).toBe(0);
  });
});

describe('README.md credit alerts: an adjustment that crosses a threshold appends it too', () => {
  it('appends it after a negative adjustment that takes available below, naming the adjustment by its idempotency key', () => {
    spec
      .given([granted(1_000), alertsSet([availableBelow(500)])])
      .when(adjust(-600, 'adjust-9'))
      .then([
        adjusted(-600, 'adjust-9'),
        thresholdCrossed(availableBelow(500), { available: 400, charged: 0, grantedCredits: 400, usedPercent: 0 }, { kind: 'adjustment', idempotencyKey: 'adjust-9' }),
      ]);
  });

  it('does not append it for a repeated adjustment (the idempotent repeat writes nothing at all)', () => {
    spec
      .given([granted(1_000), alertsSet([availableBelow(500)]), adjusted(-600, 'adjust-9'), thresholdCrossed(availableBelow(500), { available: 400, charged: 0, grantedCredits: 400, usedPercent: 0 }, { kind: 'adjustment', idempotencyKey: 'adjust-9' })])
      .when(adjust(-600, 'adjust-9'))
      .thenNothing();
  });
});

describe('README.md credit alerts: used_share_above compares in integers, never floats', () => {
  it('is not crossed at exactly the percent, and is crossed one credit past it', () => {
    spec
      .given([granted(1_000), alertsSet([usedShareAbove(80)]), holdPlaced('inv-1', 900)])
      .when(settleHold('inv-1', 800))
      .then([holdSettled('inv-1', 900, 800)]);
    spec
      .given([granted(1_000), alertsSet([usedShareAbove(80)]), holdPlaced('inv-1', 900)])
      .when(settleHold('inv-1', 801))
      .then([
        holdSettled('inv-1', 900, 801),
        thresholdCrossed(usedShareAbove(80), { available: 199, charged: 801, grantedCredits: 1_000, usedPercent: 80 }, settlement('inv-1')),
      ]);
  });

  it('decides exactly where floating point would not: 4,503,599,627,370,495 of 9,007,199,254,740,989 is above 50 %', () => {
    const figures = { available: 0, charged: 4_503_599_627_370_495, grantedCredits: 9_007_199_254_740_989 };
    // In doubles both sides round to the same value and the share would read as not above.
    expect(figures.charged * 100 > 50 * figures.grantedCredits).toBe(false);
    expect(isPast(usedShareAbove(50), figures)).toBe(true);
    expect(isPast(usedShareAbove(50), { ...figures, charged: figures.charged - 1 })).toBe(false);
  });

  it('reads any charge against nothing granted as above every share', () => {
    expect(isPast(usedShareAbove(100), { available: -5, charged: 5, grantedCredits: 0 })).toBe(true);
    expect(isPast(usedShareAbove(100), { available: 0, charged: 0, grantedCredits: 0 })).toBe(false);
  });

  it('appends one event per threshold crossed by the same settlement, in the order the thresholds were set', () => {
    spec
      .given([granted(1_000), alertsSet([usedShareAbove(50), availableBelow(600)]), holdPlaced('inv-1', 700)])
      .when(settleHold('inv-1', 600))
      .then([
        holdSettled('inv-1', 700, 600),
        thresholdCrossed(usedShareAbove(50), { available: 400, charged: 600, grantedCredits: 1_000, usedPercent: 60 }, settlement('inv-1')),
        thresholdCrossed(availableBelow(600), { available: 400, charged: 600, grantedCredits: 1_000, usedPercent: 60 }, settlement('inv-1')),
      ]);
  });
});

describe('README.md credit alerts: PUT …/alerts replaces the thresholds', () => {
  it('records the thresholds, and writes nothing when the same ones are set again', () => {
    spec.given([granted(1_000)]).when(setAlerts([availableBelow(100), usedShareAbove(90)])).then([alertsSet([availableBelow(100), usedShareAbove(90)])]);
    spec.given([granted(1_000), alertsSet([availableBelow(100)])]).when(setAlerts([availableBelow(100)])).thenNothing();
  });

  it('keeps the recorded crossing of a threshold that stays in the list, and forgets thresholds that leave it', () => {
    const crossed = [
      granted(1_000),
      alertsSet([availableBelow(300), usedShareAbove(50)]),
      holdPlaced('inv-1', 800),
      holdSettled('inv-1', 800, 750),
      thresholdCrossed(availableBelow(300), { available: 250, charged: 750, grantedCredits: 1_000, usedPercent: 75 }, settlement('inv-1')),
      thresholdCrossed(usedShareAbove(50), { available: 250, charged: 750, grantedCredits: 1_000, usedPercent: 75 }, settlement('inv-1')),
    ];
    const state = spec.given([...crossed, alertsSet([availableBelow(300)])]).state();
    expect([...state.crossedThresholds]).toEqual(['available_below:300']);
  });

  it('raises a threshold that was already past when set at the next settlement that leaves it past', () => {
    spec
      .given([granted(1_000), holdPlaced('inv-1', 900), holdSettled('inv-1', 900, 900), alertsSet([availableBelow(500)]), holdPlaced('inv-2', 10)])
      .when(settleHold('inv-2', 10))
      .then([
        holdSettled('inv-2', 10, 10),
        thresholdCrossed(availableBelow(500), { available: 90, charged: 910, grantedCredits: 1_000, usedPercent: 91 }, settlement('inv-2')),
      ]);
  });

  it('refuses an organization with no account, so alerts never create one', () => {
    spec.given([]).when(setAlerts([availableBelow(100)])).thenThrows(IllegalTransitionError);
  });

  it.each([
    [[{ kind: 'balance_below', credits: 1 }], 'thresholds.0.kind'],
    [[{ kind: 'available_below', credits: -1 }], 'thresholds.0.credits'],
    [[{ kind: 'available_below', credits: 1.5 }], 'thresholds.0.credits'],
    [[{ kind: 'used_share_above', percent: 0 }], 'thresholds.0.percent'],
    [[{ kind: 'used_share_above', percent: 101 }], 'thresholds.0.percent'],
    [[{ kind: 'used_share_above', percent: 80, credits: 5 }], 'thresholds.0.credits'],
    [[{ kind: 'available_below', credits: 5 }, { kind: 'available_below', credits: 5 }], 'thresholds.1'],
    [Array.from({ length: MAX_ALERT_THRESHOLDS + 1 }, (_, index) => ({ kind: 'available_below', credits: index })), 'thresholds'],
  ])('refuses %j naming %s, and writes nothing', (thresholds, field) => {
    spec
      .given([granted(1_000)])
      .when(setAlerts(thresholds as never))
      .thenThrows(ValidationError, { field });
  });
});

describe('account snapshots keep the alerts (codec version 3)', () => {
  it('round-trips the thresholds and the recorded crossings', () => {
    const state = spec
      .given([
        granted(1_000),
        alertsSet([availableBelow(300)]),
        holdPlaced('inv-1', 800),
        holdSettled('inv-1', 800, 750),
        thresholdCrossed(availableBelow(300), { available: 250, charged: 750, grantedCredits: 1_000, usedPercent: 75 }, settlement('inv-1')),
      ])
      .state();
    const decoded = accountSnapshot.decode(JSON.parse(JSON.stringify(accountSnapshot.encode(state))));
    expect(decoded).toEqual(state);
    expect(accountSnapshot.version).toBe(3);
  });
});
