import { Module } from '@nestjs/common';
import { HttpKitModule } from '../http-kit/http-kit.module';
import { GatewayKeysController } from './gateway-keys.controller';
import { GatewayTeamsController } from './gateway-teams.controller';
import { GatewayModule } from './gateway.module';
import { RateCardController } from './rate-card.controller';

/** The gateway's admin routes (docs/gateway.md): keys, teams and the rate card, mounted with the API under its prefix. */
@Module({
  imports: [HttpKitModule, GatewayModule],
  controllers: [GatewayKeysController, GatewayTeamsController, RateCardController],
})
export class GatewayAdminHttpModule {}
