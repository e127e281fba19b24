import type { FactoryProvider } from '@nestjs/common';
import { LEDGER_CONFIG, loadLedgerConfig, type LedgerConfig } from '../config/ledger.config';
import type { LedgerModuleExtras, LedgerModuleOptions } from './ledger-module.options';

/**
 * LEDGER_CONFIG from LedgerModule's options (held under `optionsToken`), each falling back to its
 * environment variable. What the extras mount is taken from them alone, never from the environment:
 * an embedding application that happens to run with LEDGER_DEMO=1 does not get the demo.
 */
export function ledgerConfigProvider(optionsToken: string | symbol, extras: LedgerModuleExtras): FactoryProvider<LedgerConfig> {
  return {
    provide: LEDGER_CONFIG,
    inject: [optionsToken],
    useFactory: (options: LedgerModuleOptions): LedgerConfig =>
      loadLedgerConfig(options.env ?? process.env, {
        store: options.store,
        readStore: options.readStore,
        answerStore: options.answerStore,
        synchronous: options.synchronous,
        projectionsThread: options.projectionsThread,
        anthropicApiKey: options.anthropic?.apiKey,
        anthropicBaseUrl: options.anthropic?.baseURL,
        tokens: extras.http === false || extras.http === undefined ? undefined : extras.http.tokens,
        demo: extras.demo === true,
        recoveryIntervalMs: options.recovery === false ? 0 : options.recovery?.intervalMs,
        recoveryStaleAfterMs: options.recovery === false ? undefined : options.recovery?.staleAfterMs,
      }),
  };
}
