import { Module, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TerminusModule } from '@nestjs/terminus';
import { HttpKitModule } from '../http-kit/http-kit.module';
import { HealthController } from './health.controller';
import { InvocationsController } from './invocations.controller';
import { MeController } from './me.controller';
import { OperationsController } from './operations.controller';
import { OrganizationReadsController } from './organization-reads.controller';
import { OrganizationsController } from './organizations.controller';
import { ReadModelReader } from './read-model.reader';
import { SettlementsController } from './settlements.controller';
import { StreamsController } from './streams.controller';

/**
 * The accounting core's routes (docs/http.md): operations, organizations, invocations, streams,
 * settlements, the caller and health. They live here, not in src/catalog, src/accounts or
 * src/invocations, because those rooms import no transport (docs/architecture.md); they dispatch
 * those rooms' commands and execute the read side's queries. `readSide`: a module exporting
 * LiveProjections, which the readiness probe reads.
 */
@Module({
  imports: [CqrsModule, TerminusModule.forRoot({ errorLogStyle: 'json' }), HttpKitModule],
  controllers: [
    OperationsController,
    OrganizationsController,
    OrganizationReadsController,
    InvocationsController,
    StreamsController,
    SettlementsController,
    MeController,
    HealthController,
  ],
  providers: [ReadModelReader],
})
export class CoreHttpModule {
  static register({ readSide }: { readonly readSide: NonNullable<ModuleMetadata['imports']>[number] }): DynamicModule {
    return { module: CoreHttpModule, imports: [readSide] };
  }
}
