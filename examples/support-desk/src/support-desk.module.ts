import { Module, type DynamicModule } from '@nestjs/common';
import { LedgerFeaturesModule, LedgerModule, type LedgerModuleOptions } from 'llm-ledger';
import { SettledInvocations, SettledListener } from './settled.listener';
import { triageFeature } from './triage.feature';

/** The desk's own module: registers its operation and listens to settlements. */
@Module({ imports: [LedgerFeaturesModule.register(triageFeature)], providers: [SettledInvocations, SettledListener], exports: [SettledInvocations] })
export class TriageModule {}

/** The application: the ledger embedded (no HTTP API, no demo) beside the desk's module. */
@Module({})
export class SupportDeskModule {
  static forRoot(ledger: LedgerModuleOptions): DynamicModule {
    return { module: SupportDeskModule, imports: [LedgerModule.forRoot(ledger), TriageModule] };
  }
}
