import type { Projection } from '../src/projection-runner';
import { balancesProjection } from './balances.projection';
import { invocationsProjection } from './invocations.projection';

export * from './balances.projection';
export * from './invocations.projection';

/** Every read model of the service, in the order the runner applies them. */
export const ALL_PROJECTIONS: readonly Projection[] = [invocationsProjection as Projection, balancesProjection as Projection];
