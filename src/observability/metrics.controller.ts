import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { ApiAuthenticatedErrors, ApiUnavailable } from '../http-kit/api-docs.decorators';
import { Roles } from '../http-kit/auth/roles.decorator';
import type { HttpResponse } from '../http-kit/http.types';
import { LedgerMetrics } from './ledger-metrics';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/** `GET /metrics` on the API's own port, for the `system` role (README.md "Metrics"). */
@ApiTags('observability')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
// The projection-lag gauge reads the read models' checkpoints and the log's head.
@ApiUnavailable()
@LedgerApi()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: LedgerMetrics) {}

  @Get()
  @Roles('system')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Prometheus metrics',
    description:
      'The ledger metrics (invocations, refusals, credits, attempts, durations, projection lag) and the process metrics, ' +
      'in the Prometheus text format. Without a token on METRICS_PORT when the operator sets it.',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'Prometheus text exposition format 0.0.4.' })
  async scrape(@Res({ passthrough: true }) response: HttpResponse): Promise<string> {
    response.header('Content-Type', this.metrics.contentType);
    return this.metrics.exposition();
  }
}
