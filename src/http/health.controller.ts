import { Controller, Get, Inject, Res, ServiceUnavailableException } from '@nestjs/common';
import type { HttpResponse as Response } from '../http-kit/http.types';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, type HealthCheckResult, type HealthIndicatorResult } from '@nestjs/terminus';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import { LiveProjections } from '../projection-runner';
import { Public } from '../http-kit/auth/roles.decorator';
import { ApiRequestErrors } from '../http-kit/api-docs.decorators';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/**
 * Readiness bound on projection lag, in log positions: with the embedded store a number of events.
 * Beyond it reads would wait (up to QUERY_CATCH_UP_TIMEOUT_MS) for their projections to catch up, so
 * the instance should not take traffic.
 */
export const MAX_READY_PROJECTION_LAG_POSITIONS = 1_000n;
/** Longest the event store may take to answer the readiness probe, in ms. */
export const READY_STORE_TIMEOUT_MS = 2_000;

/** Liveness and readiness probes (no token: orchestrators call them). */
@ApiTags('health')
@ApiRequestErrors()
@Public()
@LedgerApi()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly runner: LiveProjections,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('live')
  @HealthCheck()
  @ApiOperation({ summary: 'Liveness', description: 'Answers 200 while the process serves HTTP.' })
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  /** The event store answers and every projection is live, unfaulted and within the lag bound. */
  @Get('ready')
  @HealthCheck()
  @ApiOperation({
    summary: 'Readiness',
    description: `503 unless the event store answers within ${READY_STORE_TIMEOUT_MS} ms and every projection is live, ` +
      `unfaulted and at most ${MAX_READY_PROJECTION_LAG_POSITIONS} log positions behind.`,
  })
  async ready(@Res({ passthrough: true }) response: Response): Promise<HealthCheckResult> {
    try {
      return await this.health.check([() => this.eventStore(), () => this.projections()]);
    } catch (error) {
      // Not ready is an answer, not an error: the probe gets Terminus's report with its 503.
      if (!(error instanceof ServiceUnavailableException)) throw error;
      response.status(503);
      return error.getResponse() as HealthCheckResult;
    }
  }

  private async eventStore(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('eventStore');
    let timer: NodeJS.Timeout | undefined;
    try {
      const head = await Promise.race([
        this.store.headPosition(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${READY_STORE_TIMEOUT_MS} ms`)), READY_STORE_TIMEOUT_MS);
        }),
      ]);
      return check.up({ headPosition: head === undefined ? null : head.toString() });
    } catch (error) {
      return check.down({ message: error instanceof Error ? error.message : 'the event store did not answer' });
    } finally {
      clearTimeout(timer);
    }
  }

  private async projections(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('projections');
    const { state, error: failure } = this.runner.status();
    let lags;
    try {
      lags = await this.runner.lag();
    } catch (error) {
      return check.down({ state, message: error instanceof Error ? error.message : 'lag unknown' });
    }
    const behind = lags.filter((lag) => lag.faulted || lag.lag > MAX_READY_PROJECTION_LAG_POSITIONS);
    const details = {
      state,
      ...(failure === undefined ? {} : { error: failure.message }),
      maxLagPositions: MAX_READY_PROJECTION_LAG_POSITIONS.toString(),
      lag: Object.fromEntries(lags.map((lag) => [lag.projection, lag.lag.toString()])),
      ...(behind.length === 0 ? {} : { notReady: behind.map((lag) => (lag.faulted ? `${lag.projection} (faulted)` : lag.projection)) }),
    };
    return state === 'live' && behind.length === 0 ? check.up(details) : check.down(details);
  }
}
