/**
 * Where the HTTP API finds the read models of SPEC §9 besides invocations and balances. The documents
 * are returned as the projections write them; their types are the projections' own.
 */
import {
  ATTEMPTS_COLLECTION,
  ATTEMPTS_PROJECTION,
  EXPLANATION_COLLECTION,
  EXPLANATIONS_PROJECTION,
  ROUTING_BUDGETS_COLLECTION,
  ROUTING_BUDGETS_PROJECTION,
} from '../../projections';
import type { ReadModelAddress } from './read-model.reader';

export type { AttemptHistoryView, ExplanationView, RoutingBudgetsView } from '../../projections';

export const ATTEMPT_HISTORY: ReadModelAddress = { projection: ATTEMPTS_PROJECTION, collection: ATTEMPTS_COLLECTION };
export const EXPLANATIONS: ReadModelAddress = { projection: EXPLANATIONS_PROJECTION, collection: EXPLANATION_COLLECTION };
export const ROUTING_BUDGETS: ReadModelAddress = { projection: ROUTING_BUDGETS_PROJECTION, collection: ROUTING_BUDGETS_COLLECTION };
