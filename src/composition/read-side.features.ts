import { ObservabilityModule } from '../observability/observability.module';
import { QueriesModule } from '../queries/queries.module';
import { ReadSideModule } from './read-side.module';

/*
 * The feature modules that read this ledger's read side, each built once and imported wherever its
 * exports are needed (Nest keeps one instance of a module per composition).
 */

/** The read side's queries and the sweep's candidates. */
export const QUERIES = QueriesModule.register({ readSide: ReadSideModule });

/** Metrics and traces, whose gauges read the read models. */
export const OBSERVABILITY = ObservabilityModule.register({ readSide: ReadSideModule });
