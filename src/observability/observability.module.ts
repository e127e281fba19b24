import { BeforeApplicationShutdown, Inject, Logger, Module, OnApplicationBootstrap, OnModuleInit, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import { BALANCE_COLLECTION, BALANCES_PROJECTION, type StoredBalance } from '../../projections';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import { LiveProjections, READ_MODEL_STORE, type SqliteReadModelStore } from '../projection-runner';
import { INVOCATION_INSTRUMENTATION } from '../invocations/invocation-instrumentation.port';
import { gatewayChatSpan, OPEN_TELEMETRY_INSTRUMENTATION } from './invocation-telemetry';
import { LedgerMetrics, type GaugeSources } from './ledger-metrics';
import { LogMetricsFollower } from './log-metrics.follower';
import { MetricsServer } from './metrics.server';
import { OBSERVABILITY_CONFIG, type ObservabilityConfig } from './observability.config';
import { serviceWorkerSlot } from '../config/service-workers.config';
import { appendTimingChannel, invocationOverheadChannel, type AppendTiming, type InvocationOverheadTiming } from '../domain/timing.channels';
import { recoveredChannel, type RecoveredMessage } from '../domain/recovery.channel';
import { gatewayAttemptChannel, gatewayCallChannel, type GatewayAttempt, type GatewayCallTiming } from '../gateway/gateway-http.channels';

/** Credits held per organization, paged through the balances read model. */
function* heldByOrganization(store: SqliteReadModelStore): Iterable<{ organizationId: string; held: number }> {
  for (const { id, document } of store.listEvery<StoredBalance>(BALANCES_PROJECTION, BALANCE_COLLECTION)) yield { organizationId: id, held: document.held };
}

/**
 * Metrics (README.md "Metrics") and traces (README.md "Traces"): the registry, the log follower that
 * feeds its counters after commit, the timings the core publishes on its channels
 * (src/domain/timing.channels.ts) and the gateway's calls and attempts (src/gateway/gateway-http.channels.ts), the core's INVOCATION_INSTRUMENTATION port, and the tokenless
 * listener on METRICS_PORT when one is set. The `GET /metrics` route on the API's port is
 * MetricsController, mounted with the other routes (LEDGER_CONTROLLERS). Its configuration
 * (OBSERVABILITY_CONFIG) is provided by the composition root, and so is the read side its gauges
 * read (READ_MODEL_STORE, LiveProjections): `register({ readSide })`.
 */
@Module({
  providers: [
    {
      provide: LedgerMetrics,
      inject: [OBSERVABILITY_CONFIG, READ_MODEL_STORE, LiveProjections],
      useFactory: (config: ObservabilityConfig, store: SqliteReadModelStore, projections: LiveProjections) => {
        const sources: GaugeSources = {
          heldCredits: () => heldByOrganization(store),
          projectionLag: async () => (await projections.lag()).map(({ projection, lag }) => ({ projection, lag: Number(lag) })),
        };
        const metrics = new LedgerMetrics({ organizationLabels: config.organizationLabels }, sources);
        const slot = serviceWorkerSlot();
        if (slot !== undefined) metrics.joinCluster(slot);
        return metrics;
      },
    },
    {
      provide: LogMetricsFollower,
      inject: [EVENT_STORE, LedgerMetrics],
      useFactory: (store: EventStore, metrics: LedgerMetrics) => {
        const logger = new Logger('Metrics');
        return new LogMetricsFollower(store, metrics, (error, willRetry) =>
          willRetry
            ? logger.warn({ message: 'the metrics follower lost the log; resubscribing', error: error.message })
            : logger.error({ message: 'the metrics follower stopped following the log; counters stay where they are until a restart', error: error.message }),
        );
      },
    },
    // The core's port for observing its runs (traces and the accounting overhead).
    { provide: INVOCATION_INSTRUMENTATION, useValue: OPEN_TELEMETRY_INSTRUMENTATION },
  ],
  exports: [LedgerMetrics, INVOCATION_INSTRUMENTATION],
})
export class ObservabilityModule implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  /** `readSide`: a module exporting READ_MODEL_STORE and LiveProjections. */
  static register({ readSide }: { readonly readSide: NonNullable<ModuleMetadata['imports']>[number] }): DynamicModule {
    return { module: ObservabilityModule, imports: [readSide] };
  }

  private readonly logger = new Logger('Metrics');
  private readonly server: MetricsServer;
  private readonly onAppend = (message: unknown): void => this.metrics.appendObserved((message as AppendTiming).durationMs);
  private readonly onRecovered = (message: unknown): void => {
    const { kind, count } = message as RecoveredMessage;
    this.metrics.recoveredAdd(kind, count);
  };
  private readonly onOverhead = (message: unknown): void => {
    const { operationId, overheadMs } = message as InvocationOverheadTiming;
    this.metrics.accountingOverheadObserved(operationId, overheadMs);
  };
  private readonly onGatewayCall = (message: unknown): void => this.metrics.gatewayCallObserved(message as GatewayCallTiming);
  private readonly onGatewayAttempt = (message: unknown): void => gatewayChatSpan(message as GatewayAttempt);

  constructor(
    @Inject(OBSERVABILITY_CONFIG) private readonly config: ObservabilityConfig,
    private readonly metrics: LedgerMetrics,
    private readonly follower: LogMetricsFollower,
  ) {
    this.server = new MetricsServer(metrics);
  }

  async onModuleInit(): Promise<void> {
    appendTimingChannel.subscribe(this.onAppend);
    invocationOverheadChannel.subscribe(this.onOverhead);
    recoveredChannel.subscribe(this.onRecovered);
    gatewayCallChannel.subscribe(this.onGatewayCall);
    gatewayAttemptChannel.subscribe(this.onGatewayAttempt);
    // Before any command runs, so every invocation is counted from its first event.
    await this.follower.start();
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.metricsPort === undefined) return;
    const port = await this.server.listen(this.config.metricsPort, this.config.metricsHost);
    this.logger.log(`metrics without a token on ${this.config.metricsHost}:${port}/metrics`);
  }

  /** The tokenless metrics port, once listening (undefined without METRICS_PORT). */
  get metricsPort(): number | undefined {
    return this.server.port;
  }

  async beforeApplicationShutdown(): Promise<void> {
    appendTimingChannel.unsubscribe(this.onAppend);
    invocationOverheadChannel.unsubscribe(this.onOverhead);
    recoveredChannel.unsubscribe(this.onRecovered);
    gatewayCallChannel.unsubscribe(this.onGatewayCall);
    gatewayAttemptChannel.unsubscribe(this.onGatewayAttempt);
    await this.server.close();
    await this.follower.stop();
  }
}
