import { DynamicModule, Module, type ModuleMetadata } from '@nestjs/common';
import { demoRequested } from '../config/ledger.config';
import { DemoArithmeticModule } from '../features/demo-arithmetic/demo-arithmetic.module';
import { ServiceLoggingModule } from '../logging/service-logging.module';
import { LedgerModule } from './ledger.module';

export interface AppModuleOptions {
  /** The environment to configure from; defaults to process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Extra modules, e.g. a test's feature module registering its own operations. */
  readonly imports?: ModuleMetadata['imports'];
}

/**
 * The standalone service: LedgerModule configured from the environment with the HTTP API on, its
 * logging (pino, one line per request), the demo seeded when LEDGER_DEMO=1, and `demo.arithmetic`
 * registered either way (README.md "The demo": the service ships it).
 */
@Module({})
export class AppModule {
  static forRoot(options: AppModuleOptions = {}): DynamicModule {
    const env = options.env ?? process.env;
    return {
      module: AppModule,
      imports: [
        LedgerModule.forRoot({ env, http: {}, demo: demoRequested(env) }),
        ServiceLoggingModule.forRoot(),
        DemoArithmeticModule,
        ...(options.imports ?? []),
      ],
    };
  }
}
