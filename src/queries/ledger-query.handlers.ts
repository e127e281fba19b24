import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import {
  ATTEMPTS_COLLECTION,
  ATTEMPTS_PROJECTION,
  BALANCES_PROJECTION,
  EXPLANATION_COLLECTION,
  EXPLANATIONS_PROJECTION,
  INVOCATION_COLLECTION,
  INVOCATIONS_PROJECTION,
  ROUTING_BUDGETS_COLLECTION,
  ROUTING_BUDGETS_PROJECTION,
  readBalanceView,
  type AttemptHistoryView,
  type BalanceView,
  type ExplanationView,
  type InvocationView,
  type RoutingBudgetsView,
} from '../../projections';
import { GetAttemptsQuery, GetBalanceQuery, GetExplanationQuery, GetInvocationQuery, GetPublicationsQuery } from './ledger.queries';
import { ReadModels } from './read-models';

@QueryHandler(GetInvocationQuery)
export class GetInvocationHandler implements IQueryHandler<GetInvocationQuery> {
  constructor(private readonly readModels: ReadModels) {}

  execute({ invocationId }: GetInvocationQuery): Promise<InvocationView | undefined> {
    return this.readModels.get({ projection: INVOCATIONS_PROJECTION, collection: INVOCATION_COLLECTION }, invocationId);
  }
}

@QueryHandler(GetAttemptsQuery)
export class GetAttemptsHandler implements IQueryHandler<GetAttemptsQuery> {
  constructor(private readonly readModels: ReadModels) {}

  execute({ invocationId }: GetAttemptsQuery): Promise<AttemptHistoryView | undefined> {
    return this.readModels.get({ projection: ATTEMPTS_PROJECTION, collection: ATTEMPTS_COLLECTION }, invocationId);
  }
}

@QueryHandler(GetExplanationQuery)
export class GetExplanationHandler implements IQueryHandler<GetExplanationQuery> {
  constructor(private readonly readModels: ReadModels) {}

  execute({ invocationId }: GetExplanationQuery): Promise<ExplanationView | undefined> {
    return this.readModels.get({ projection: EXPLANATIONS_PROJECTION, collection: EXPLANATION_COLLECTION }, invocationId);
  }
}

@QueryHandler(GetBalanceQuery)
export class GetBalanceHandler implements IQueryHandler<GetBalanceQuery> {
  constructor(private readonly readModels: ReadModels) {}

  execute({ organizationId }: GetBalanceQuery): Promise<BalanceView | undefined> {
    // The figures and the open holds from one snapshot, so they agree.
    return this.readModels.read(BALANCES_PROJECTION, (store) => readBalanceView(store, organizationId));
  }
}

@QueryHandler(GetPublicationsQuery)
export class GetPublicationsHandler implements IQueryHandler<GetPublicationsQuery> {
  constructor(private readonly readModels: ReadModels) {}

  execute({ operationId }: GetPublicationsQuery): Promise<RoutingBudgetsView | undefined> {
    return this.readModels.get({ projection: ROUTING_BUDGETS_PROJECTION, collection: ROUTING_BUDGETS_COLLECTION }, operationId);
  }
}

/** Every query handler of the read side, for the module that provides them. */
export const LEDGER_QUERY_HANDLERS = [GetInvocationHandler, GetAttemptsHandler, GetExplanationHandler, GetBalanceHandler, GetPublicationsHandler];
