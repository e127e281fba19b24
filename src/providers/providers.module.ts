import { Module } from '@nestjs/common';
import { ProviderRegistry } from './provider.registry';

/** The registry that resolves a publication's routing to a provider, configured from LEDGER_CONFIG. */
@Module({
  providers: [ProviderRegistry],
  exports: [ProviderRegistry],
})
export class ProvidersModule {}
