import { discoverProjections, type Projection, type ProjectionsModule } from '../src/projection-runner';

export * from './attempts.projection';
export * from './balances.projection';
export * from './explanation-sentence';
export * from './explanation.view';
export * from './explanations.projection';
export * from './gateway-explanation-sentence';
export * from './invocation-list.projection';
export * from './invocations.projection';
export * from './ledger-entries.projection';
export * from './routing-budgets.projection';
export * from './usage-statements.projection';

/**
 * Every read model of the service: each projection a `*.projection.ts` file of this folder exports, in
 * file-name order (discoverProjections). A new projection is its file, and nothing here: the live
 * runner, `projections rebuild` (its groups derived from the log: rebuildGroups) and `audit verify`
 * all take this list (docs/architecture.md "Where does my change go").
 */
export const ALL_PROJECTIONS: readonly Projection[] = discoverProjections(__dirname);

/** Where a worker thread loads ALL_PROJECTIONS from: this folder's index, built or not. */
export const ALL_PROJECTIONS_MODULE: ProjectionsModule = { path: __dirname, exportName: 'ALL_PROJECTIONS' };
