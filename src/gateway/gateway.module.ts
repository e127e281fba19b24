import { Module } from '@nestjs/common';
import { AggregatesModule } from '../aggregates/aggregates.module';
import { GATEWAY_ACCOUNTING } from './gateway-call.port';
import { GatewayAdmin } from './gateway-admin.service';
import { GatewayTeams } from './gateway-teams.service';
import { GatewayCalls } from './gateway-calls.service';
import { GatewayRejections } from './gateway-rejections';

/**
 * The gateway's accounting (docs/gateway.md): keys and the rate card, and the admission and settlement
 * of each call behind GATEWAY_ACCOUNTING, which the `/anthropic` routes use. Its admin routes are
 * GatewayAdminHttpModule's.
 */
@Module({
  imports: [AggregatesModule],
  providers: [GatewayCalls, GatewayAdmin, GatewayTeams, GatewayRejections, { provide: GATEWAY_ACCOUNTING, useExisting: GatewayCalls }],
  exports: [GatewayCalls, GatewayAdmin, GatewayTeams, GatewayRejections, GATEWAY_ACCOUNTING],
})
export class GatewayModule {}
