import { Module } from '@nestjs/common';
import { CLOCK } from '../domain/clock.token';
import type { Clock } from '../runtime/clock';
import { AnthropicMessagesController } from './anthropic-messages.controller';
import { AnthropicModelsController, AnthropicNotFoundController } from './anthropic-models.controller';
import { GatewayForwarder } from './gateway-forwarder';
import { GATEWAY_PROVIDER, type GatewayProvider } from './gateway-provider.port';
import { GatewayProviderModule } from './gateway-provider.module';
import { AnthropicBatchesController } from './batches/anthropic-batches.controller';

/**
 * The gateway's HTTP side (docs/gateway.md): the `/anthropic` routes, the forwarder and its
 * connection pool, and the upstream they forward to (GATEWAY_PROVIDER, GatewayProviderModule's, from
 * the registry in providers/gateway-providers.ts). It decides no money: whoever imports it provides
 * GATEWAY_ACCOUNTING (the accounting side), beside the ledger's LEDGER_CONFIG (`ANTHROPIC_API_KEY`,
 * `ANTHROPIC_BASE_URL`) and CLOCK, which LedgerModule provides globally. Mounted under `http.prefix` like the API.
 */
@Module({
  imports: [GatewayProviderModule],
  // The batches' routes before the messages' (`…/messages/batches` is not a `…/messages` call), the catch-all last.
  controllers: [AnthropicBatchesController, AnthropicMessagesController, AnthropicModelsController, AnthropicNotFoundController],
  providers: [
    { provide: GatewayForwarder, inject: [GATEWAY_PROVIDER, CLOCK], useFactory: (provider: GatewayProvider, clock: Clock) => new GatewayForwarder(provider, clock) },
  ],
})
export class GatewayHttpModule {}
