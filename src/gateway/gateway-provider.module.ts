import { Module } from '@nestjs/common';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { GATEWAY_PROVIDER } from './gateway-provider.port';
import { gatewayProviderOf } from './providers/gateway-providers';

/**
 * The gateway's upstream (GATEWAY_PROVIDER, from the registry in providers/gateway-providers.ts), one
 * for both sides: the `/anthropic` routes forward calls to it (GatewayHttpModule), and the batches'
 * accounting calls its Message Batches API (GatewayModule). Built from LEDGER_CONFIG, which
 * LedgerModule provides globally.
 */
@Module({
  providers: [{ provide: GATEWAY_PROVIDER, inject: [LEDGER_CONFIG], useFactory: (config: LedgerConfig) => gatewayProviderOf(config) }],
  exports: [GATEWAY_PROVIDER],
})
export class GatewayProviderModule {}
