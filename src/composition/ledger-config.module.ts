import { DynamicModule, Global, Module } from '@nestjs/common';
import { ConfigModule, ConfigService, registerAs } from '@nestjs/config';
import { LEDGER_CONFIG, LedgerConfig, loadLedgerConfig } from '../config/ledger.config';

const LEDGER_NAMESPACE = 'ledger';

/**
 * Loads the configuration through @nestjs/config and exposes it, typed, as LEDGER_CONFIG.
 * The environment is passed in so tests can start the application with their own.
 */
@Global()
@Module({})
export class LedgerConfigModule {
  static forRoot(env: Readonly<Record<string, string | undefined>> = process.env): DynamicModule {
    return {
      module: LedgerConfigModule,
      imports: [
        ConfigModule.forRoot({
          ignoreEnvFile: true,
          load: [registerAs(LEDGER_NAMESPACE, () => loadLedgerConfig(env))],
        }),
      ],
      providers: [
        {
          provide: LEDGER_CONFIG,
          inject: [ConfigService],
          useFactory: (config: ConfigService): LedgerConfig => config.getOrThrow<LedgerConfig>(LEDGER_NAMESPACE),
        },
      ],
      exports: [LEDGER_CONFIG],
    };
  }
}
