import { Module } from '@nestjs/common';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { CLOCK } from '../domain/clock.token';
import { ANTHROPIC_DEFAULT_BASE_URL } from '../providers/anthropic/anthropic.provider';
import type { Clock } from '../runtime/clock';
import { AnthropicMessagesController } from './anthropic-messages.controller';
import { AnthropicModelsController, AnthropicNotFoundController } from './anthropic-models.controller';
import { GatewayForwarder } from './gateway-forwarder';
import { AnthropicBatchesController } from './batches/anthropic-batches.controller';

/**
 * The gateway's HTTP side (docs/gateway.md): the `/anthropic` routes, the forwarder and its
 * connection pool. It decides no money: whoever imports it provides GATEWAY_ACCOUNTING (the
 * accounting side), beside the ledger's LEDGER_CONFIG (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`) and
 * CLOCK, which LedgerModule provides globally. Mounted under `http.prefix` like the API.
 */
@Module({
  // The batches' routes before the messages' (`…/messages/batches` is not a `…/messages` call), the catch-all last.
  controllers: [AnthropicBatchesController, AnthropicMessagesController, AnthropicModelsController, AnthropicNotFoundController],
  providers: [
    {
      provide: GatewayForwarder,
      inject: [LEDGER_CONFIG, CLOCK],
      useFactory: (config: LedgerConfig, clock: Clock) =>
        new GatewayForwarder({ baseURL: config.anthropicBaseUrl ?? ANTHROPIC_DEFAULT_BASE_URL, ...(config.anthropicApiKey === undefined ? {} : { apiKey: config.anthropicApiKey }) }, clock),
    },
  ],
})
export class GatewayHttpModule {}
