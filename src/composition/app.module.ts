import { DynamicModule, Module, type ModuleMetadata } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { LedgerConfigModule } from './ledger-config.module';
import { DemoModule } from '../demo/demo.module';
import { EventStoreModule } from './event-store.module';
import { DemoArithmeticModule } from '../features/demo-arithmetic/demo-arithmetic.module';
import { HttpModule } from '../http/http.module';
import { LedgerModule } from './ledger-core.module';
import { ReadSideModule } from './read-side.module';

export interface AppModuleOptions {
  /** The environment to configure from; defaults to process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Extra modules, e.g. a test's feature module registering its own operations. */
  readonly imports?: ModuleMetadata['imports'];
}

@Module({})
export class AppModule {
  static forRoot(options: AppModuleOptions = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        LedgerConfigModule.forRoot(options.env),
        CqrsModule.forRoot(),
        EventStoreModule,
        ReadSideModule,
        LedgerModule,
        DemoArithmeticModule,
        HttpModule,
        DemoModule,
        ...(options.imports ?? []),
      ],
    };
  }
}
