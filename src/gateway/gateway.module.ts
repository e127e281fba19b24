import { Module } from '@nestjs/common';
import { AggregatesModule } from '../aggregates/aggregates.module';
import { GATEWAY_ACCOUNTING } from './gateway-call.port';
import { GatewayAdmin } from './gateway-admin.service';
import { GatewayTeams } from './gateway-teams.service';
import { GatewayCalls } from './gateway-calls.service';
import { GatewayRejections } from './gateway-rejections';
import { GatewaySettlementRetries } from './gateway-settlement-retries';
import { GatewayBatches } from './batches/gateway-batches.service';
import { GatewayBatchesPoller } from './batches/gateway-batches.poller';
import { GatewayProviderModule } from './gateway-provider.module';

/**
 * The gateway's accounting (docs/gateway.md): keys and the rate card, and the admission and settlement
 * of each call behind GATEWAY_ACCOUNTING, which the `/anthropic` routes use; Message Batches
 * (GatewayBatches and the poller of ended batches, calling the provider's batches API,
 * GatewayProviderModule's). Its admin routes are GatewayAdminHttpModule's.
 */
@Module({
  imports: [AggregatesModule, GatewayProviderModule],
  providers: [
    GatewayCalls,
    GatewayAdmin,
    GatewayTeams,
    GatewayRejections,
    GatewaySettlementRetries,
    { provide: GATEWAY_ACCOUNTING, useExisting: GatewayCalls },
    GatewayBatches,
    GatewayBatchesPoller,
  ],
  exports: [GatewayCalls, GatewayAdmin, GatewayTeams, GatewayRejections, GATEWAY_ACCOUNTING, GatewayBatches, GatewayBatchesPoller],
})
export class GatewayModule {}
