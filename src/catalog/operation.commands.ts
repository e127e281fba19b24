/** Commands of the operation catalog (docs/http.md `PUT /v1/operations/:operationId/publications`). */
import type { DomainCommand } from '../domain/decider';
import type { ConversationLimits, Prices } from '../runtime/conversation.types';
import type { Routing } from './operation.events';

/**
 * Limits as a publisher writes them: `maxAttemptsPerTurn` may be left out (default 3,
 * docs/rules.md rule 05).
 */
export type PublishedLimitsInput = Omit<ConversationLimits, 'maxAttemptsPerTurn'> & {
  readonly maxAttemptsPerTurn?: number;
};

/**
 * Publish the next version of an operation. The decider re-checks every field at run time (the body
 * may come straight from JSON) and refuses with the field named; see publication.validation.ts.
 */
export type PublishOperation = DomainCommand<
  'PublishOperation',
  {
    readonly operationId: string;
    readonly routing: Routing;
    readonly limits: PublishedLimitsInput;
    readonly prices: Prices;
    readonly creditHold: number;
    readonly enabled: boolean;
    /** ISO-8601, from the handler's clock: deciders read no clock. */
    readonly publishedAt: string;
  }
>;

export type OperationCommand = PublishOperation;
