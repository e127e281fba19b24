import { Command } from '@nestjs/cqrs';
import type { PublishedLimitsInput } from './operation.commands';
import type { Routing } from './operation.events';

export interface PublicationRequest {
  readonly routing: Routing;
  readonly limits: PublishedLimitsInput;
  readonly prices: {
    readonly inputPerMTok: number;
    readonly outputPerMTok: number;
    readonly cacheWritePerMTok: number;
    readonly cacheReadPerMTok: number;
  };
  readonly creditHold: number;
  readonly enabled: boolean;
}

export interface PublishedVersion {
  readonly operationId: string;
  readonly version: number;
}

/**
 * Publishes the next immutable version of an operation (docs/http.md, the publications routes).
 * Repeating the version in force writes nothing.
 */
export class PublishOperationCommand extends Command<PublishedVersion> {
  constructor(
    readonly operationId: string,
    readonly publication: PublicationRequest,
  ) {
    super();
  }
}
