import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { CLOCK, isoAt } from '../domain/clock.token';
import type { Clock } from '../runtime';
import { operationDecider, publicationInForce } from './operation.decider';
import { operationStreamName } from './operation.events';
import { PublishOperationCommand, PublishedVersion } from './publish-operation.command';

@CommandHandler(PublishOperationCommand)
export class PublishOperationHandler implements ICommandHandler<PublishOperationCommand, PublishedVersion> {
  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ operationId, publication }: PublishOperationCommand): Promise<PublishedVersion> {
    const { state } = await this.repository.handle(operationStreamName(operationId), operationDecider, {
      type: 'PublishOperation',
      data: { ...publication, operationId, publishedAt: isoAt(this.clock) },
    });
    const inForce = publicationInForce(state);
    if (inForce === undefined) throw new Error(`operation ${operationId} has no publication after publishing`);
    return { operationId, version: inForce.version };
  }
}
