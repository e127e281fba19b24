import { Module } from '@nestjs/common';
import { HttpKitModule } from '../http-kit/http-kit.module';
import { AlertsController } from './alerts.controller';
import { AlertsModule } from './alerts.module';

/** Alerts' routes (docs/http.md), mounted by the composition root when the HTTP API is on. */
@Module({
  imports: [HttpKitModule, AlertsModule],
  controllers: [AlertsController],
})
export class AlertsHttpModule {}
