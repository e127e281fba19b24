import { Module } from '@nestjs/common';
import { HttpKitModule } from '../http-kit/http-kit.module';
import { WebhooksController } from './webhooks.controller';
import { WebhooksModule } from './webhooks.module';

/** Webhooks' routes (docs/http.md), mounted by the composition root when the HTTP API is on. */
@Module({
  imports: [HttpKitModule, WebhooksModule],
  controllers: [WebhooksController],
})
export class WebhooksHttpModule {}
