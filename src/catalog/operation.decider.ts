/**
 * The operation catalog decider (docs/http.md, the publications routes): numbered, immutable
 * publications. The state keeps only the publication in force; the whole history is in the stream (and
 * in the historical-routing-budgets projection).
 */
import type { Decider } from '../domain/decider';
import { samePrices } from '../runtime/pricing';
import { ValidationError } from '../domain/domain.errors';
import type { OperationCommand } from './operation.commands';
import type { OperationEvent, OperationPublished, Publication } from './operation.events';
import { validatePublication, ValidPublication } from './publication.validation';

export interface OperationState {
  /** Undefined until the first publication. */
  readonly operationId: string | undefined;
  /** The latest publication: the one a request admitted now is resolved against. */
  readonly inForce: Publication | undefined;
}

export function initialOperationState(): OperationState {
  return { operationId: undefined, inForce: undefined };
}

/** The publication a request admitted now runs under; undefined for an operation never published. */
export function publicationInForce(state: OperationState): Publication | undefined {
  return state.inForce;
}

/**
 * PublishOperation → OperationPublished with the next version. A request whose terms (routing, limits,
 * prices, creditHold, enabled) equal the version in force emits nothing: the route is a PUT, and a
 * retried PUT must not mint a version that changes nothing. The handler then answers with
 * `publicationInForce(state).version`.
 */
export function decideOperation(command: OperationCommand, state: OperationState): OperationEvent[] {
  const publication = validatePublication(command.data);
  if (state.operationId !== undefined && publication.operationId !== state.operationId) {
    throw ValidationError.of('operationId', `this stream holds operation ${state.operationId}`);
  }
  if (state.inForce !== undefined && sameTerms(state.inForce, publication)) return [];
  const event: OperationPublished = {
    type: 'OperationPublished',
    data: {
      operationId: publication.operationId,
      version: (state.inForce?.version ?? 0) + 1,
      routing: publication.routing,
      limits: publication.limits,
      prices: publication.prices,
      creditHold: publication.creditHold,
      enabled: publication.enabled,
      publishedAt: publication.publishedAt,
    },
  };
  return [event];
}

export function evolveOperation(state: OperationState, event: OperationEvent): OperationState {
  switch (event.type) {
    case 'OperationPublished': {
      const { operationId, ...publication } = event.data;
      return { operationId, inForce: publication };
    }
    default:
      // An event type this version does not know (written by a newer one) changes nothing here.
      return state;
  }
}

export const operationDecider: Decider<OperationCommand, OperationEvent, OperationState> = {
  decide: decideOperation,
  evolve: evolveOperation,
  initialState: initialOperationState,
};

function sameTerms(a: Publication, b: ValidPublication): boolean {
  const limits = Object.keys(b.limits) as (keyof ValidPublication['limits'])[];
  return (
    a.routing.provider === b.routing.provider &&
    a.routing.model === b.routing.model &&
    limits.every((key) => a.limits[key] === b.limits[key]) &&
    samePrices(a.prices, b.prices) &&
    a.creditHold === b.creditHold &&
    a.enabled === b.enabled
  );
}
