import type { Projection } from '../src/projection-runner';
import { attemptsProjection } from './attempts.projection';
import { balancesProjection } from './balances.projection';
import { explanationsProjection } from './explanations.projection';
import { invocationsProjection } from './invocations.projection';
import { routingBudgetsProjection } from './routing-budgets.projection';

export * from './attempts.projection';
export * from './balances.projection';
export * from './explanation-sentence';
export * from './explanations.projection';
export * from './invocations.projection';
export * from './routing-budgets.projection';

/** Every read model of the service, in the order the runner applies them. */
export const ALL_PROJECTIONS: readonly Projection[] = [
  invocationsProjection as Projection,
  balancesProjection as Projection,
  attemptsProjection as Projection,
  explanationsProjection as Projection,
  routingBudgetsProjection as Projection,
];
