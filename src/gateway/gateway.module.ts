import { Module } from '@nestjs/common';
import { AggregatesModule } from '../aggregates/aggregates.module';
import { GATEWAY_ACCOUNTING } from './gateway-call.port';
import { GatewayAdmin } from './gateway-admin.service';
import { GatewayTeams } from './gateway-teams.service';
import { GatewayCalls } from './gateway-calls.service';
import { GatewayRejections } from './gateway-rejections';
import { AnthropicBatchUpstream, BATCH_UPSTREAM } from './batches/batch-upstream';
import { GatewayBatches } from './batches/gateway-batches.service';
import { GatewayBatchesPoller } from './batches/gateway-batches.poller';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { ANTHROPIC_DEFAULT_BASE_URL } from '../providers/anthropic/anthropic.provider';

/**
 * The gateway's accounting (docs/gateway.md): keys and the rate card, and the admission and settlement
 * of each call behind GATEWAY_ACCOUNTING, which the `/anthropic` routes use; Message Batches
 * (GatewayBatches, its upstream and the poller of ended batches). Its admin routes are
 * GatewayAdminHttpModule's.
 */
@Module({
  imports: [AggregatesModule],
  providers: [
    GatewayCalls,
    GatewayAdmin,
    GatewayTeams,
    GatewayRejections,
    { provide: GATEWAY_ACCOUNTING, useExisting: GatewayCalls },
    {
      provide: BATCH_UPSTREAM,
      inject: [LEDGER_CONFIG],
      useFactory: (config: LedgerConfig) =>
        new AnthropicBatchUpstream({ baseURL: config.anthropicBaseUrl ?? ANTHROPIC_DEFAULT_BASE_URL, ...(config.anthropicApiKey === undefined ? {} : { apiKey: config.anthropicApiKey }) }),
    },
    GatewayBatches,
    GatewayBatchesPoller,
  ],
  exports: [GatewayCalls, GatewayAdmin, GatewayTeams, GatewayRejections, GATEWAY_ACCOUNTING, GatewayBatches, GatewayBatchesPoller],
})
export class GatewayModule {}
