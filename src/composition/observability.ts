import { ObservabilityModule } from '../observability/observability.module';
import { ReadSideModule } from './read-side.module';

/** Metrics and traces over this ledger's read side: one module, imported wherever its exports are needed. */
export const OBSERVABILITY = ObservabilityModule.register({ readSide: ReadSideModule });
