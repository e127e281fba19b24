import { Module } from '@nestjs/common';
import { HttpKitModule } from '../http-kit/http-kit.module';
import { GatewayBatchesController } from './batches/gateway-batches.controller';
import { GatewayKeysController } from './gateway-keys.controller';
import { GatewayTeamsController } from './gateway-teams.controller';
import { GatewayModule } from './gateway.module';
import { RateCardController } from './rate-card.controller';

/** The gateway's admin routes (docs/gateway.md): keys, teams, the rate card and batches' explanations, mounted with the API under its prefix. */
@Module({
  imports: [HttpKitModule, GatewayModule],
  controllers: [GatewayKeysController, GatewayTeamsController, RateCardController, GatewayBatchesController],
})
export class GatewayAdminHttpModule {}
