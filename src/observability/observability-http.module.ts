import { Module, type DynamicModule } from '@nestjs/common';
import { HttpKitModule } from '../http-kit/http-kit.module';
import { MetricsController } from './metrics.controller';

/**
 * `GET /metrics` on the API's port (README.md "Metrics"), mounted by the composition root when the
 * HTTP API is on. `observability`: the one ObservabilityModule.register(…) the ledger is composed
 * with, so the route scrapes the same registry the tokenless port serves.
 */
@Module({
  imports: [HttpKitModule],
  controllers: [MetricsController],
})
export class ObservabilityHttpModule {
  static register({ observability }: { readonly observability: DynamicModule }): DynamicModule {
    return { module: ObservabilityHttpModule, imports: [observability] };
  }
}
