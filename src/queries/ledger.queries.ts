import { Query } from '@nestjs/cqrs';
import type { AttemptHistoryView, BalanceView, ExplanationView, InvocationView, RoutingBudgetsView } from '../../projections';

/**
 * The read side's queries on Nest's QueryBus (docs/embedding.md), for in-process readers and the HTTP API
 * alike. They are trusted (no caller check: the HTTP API scopes by organization itself) and answer once
 * the read models have reached the log's head as of the query, so a caller reads its own writes.
 * Each resolves to the document, or undefined when there is none.
 */

/** An invocation's lifecycle view: state, outcome, publication version, estimate, charge. */
export class GetInvocationQuery extends Query<InvocationView | undefined> {
  constructor(readonly invocationId: string) {
    super();
  }
}

/** An invocation's attempt history (docs/rules.md rule 07). */
export class GetAttemptsQuery extends Query<AttemptHistoryView | undefined> {
  constructor(readonly invocationId: string) {
    super();
  }
}

/**
 * Why an invocation was refused or how it ended, with the figures behind it
 * (docs/embedding.md "The queries").
 */
export class GetExplanationQuery extends Query<ExplanationView | undefined> {
  constructor(readonly invocationId: string) {
    super();
  }
}

/** An organization's balance: granted, adjustments, held, charged, available, running. */
export class GetBalanceQuery extends Query<BalanceView | undefined> {
  constructor(readonly organizationId: string) {
    super();
  }
}

/** Every published version of an operation with the window it was in force (historical routing budgets). */
export class GetPublicationsQuery extends Query<RoutingBudgetsView | undefined> {
  constructor(readonly operationId: string) {
    super();
  }
}
