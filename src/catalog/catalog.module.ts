import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AggregatesModule } from '../aggregates/aggregates.module';
import { PublishOperationHandler } from './publish-operation.handler';

/** The catalog's commands (docs/architecture.md): publishing an operation's versions. */
export const CATALOG_COMMAND_HANDLERS = [PublishOperationHandler];

@Module({
  imports: [CqrsModule, AggregatesModule],
  providers: [...CATALOG_COMMAND_HANDLERS],
})
export class CatalogModule {}
