import { Global, Module, type DynamicModule, type Type } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { Test } from '@nestjs/testing';
import { AccountsModule } from '../../src/accounts/accounts.module';
import { GrantCreditsHandler } from '../../src/accounts/account-commands.handler';
import { AlertsHttpModule } from '../../src/alerts/alerts-http.module';
import { AlertsController } from '../../src/alerts/alerts.controller';
import { AlertsModule } from '../../src/alerts/alerts.module';
import { SetAlertThresholdsHandler } from '../../src/alerts/set-alert-thresholds.handler';
import { ANSWER_STORE, type AnswerStore } from '../../src/answer-store/answer-store.port';
import { CatalogModule } from '../../src/catalog/catalog.module';
import { PublishOperationHandler } from '../../src/catalog/publish-operation.handler';
import { LedgerFoundationsModule } from '../../src/composition/ledger-foundations.module';
import { ReadSideModule } from '../../src/composition/read-side.module';
import { LEDGER_CONFIG, loadLedgerConfig } from '../../src/config/ledger.config';
import { RECOVERY_SETTINGS } from '../../src/domain/recovery.settings';
import { HTTP_ROUTE_PREFIX } from '../../src/http-kit/http-route-prefix';
import { GatewayAdminHttpModule } from '../../src/gateway/gateway-admin-http.module';
import { GatewayCalls } from '../../src/gateway/gateway-calls.service';
import { GatewayModule } from '../../src/gateway/gateway.module';
import { RateCardController } from '../../src/gateway/rate-card.controller';
import { CoreHttpModule } from '../../src/http/core-http.module';
import { HealthController } from '../../src/http/health.controller';
import { InvocationsModule } from '../../src/invocations/invocations.module';
import { InvocationRecovery } from '../../src/invocations/invocation-recovery';
import { IDEMPOTENCY_SECRET } from '../../src/invocations/request-fingerprint';
import { RunOperationHandler } from '../../src/invocations/run-operation.handler';
import { SWEEP_CANDIDATES, type SweepCandidates } from '../../src/invocations/sweep-candidates.port';
import { CommittedEventsPublisher } from '../../src/ledger-events/committed-events.publisher';
import { LedgerEventsModule } from '../../src/ledger-events/ledger-events.module';
import { LedgerMetrics } from '../../src/observability/ledger-metrics';
import { MetricsController } from '../../src/observability/metrics.controller';
import { OBSERVABILITY_CONFIG, loadObservabilityConfig } from '../../src/observability/observability.config';
import { ObservabilityHttpModule } from '../../src/observability/observability-http.module';
import { ObservabilityModule } from '../../src/observability/observability.module';
import { GetUsageHandler } from '../../src/queries/get-usage.query';
import { QueriesModule } from '../../src/queries/queries.module';
import { WEBHOOKS_CONFIG, loadWebhooksConfig } from '../../src/webhooks/webhooks.config';
import { WebhooksController } from '../../src/webhooks/webhooks.controller';
import { WebhooksHttpModule } from '../../src/webhooks/webhooks-http.module';
import { WebhooksModule } from '../../src/webhooks/webhooks.module';
import { WebhooksService } from '../../src/webhooks/webhooks.service';

/*
 * docs/architecture.md: each feature module is importable on its own. Given only what the composition
 * root gives every feature (the configuration, the route prefix when the API is mounted, and LedgerFoundationsModule: the store, the clock, the
 * jitter) and, for a module with ports, modules filling them, it compiles and builds what it owns.
 */

const ENV = { LEDGER_STORE: 'sqlite::memory:', LEDGER_READ_STORE: ':memory:', LEDGER_ANSWER_STORE: ':memory:' };

@Global()
@Module({
  providers: [
    { provide: LEDGER_CONFIG, useValue: loadLedgerConfig(ENV) },
    { provide: OBSERVABILITY_CONFIG, useValue: loadObservabilityConfig(ENV) },
    { provide: WEBHOOKS_CONFIG, useValue: loadWebhooksConfig(ENV) },
    // What LedgerModule adds when it mounts the HTTP API.
    { provide: HTTP_ROUTE_PREFIX, useValue: '' },
  ],
  exports: [LEDGER_CONFIG, OBSERVABILITY_CONFIG, WEBHOOKS_CONFIG, HTTP_ROUTE_PREFIX],
})
class ConfigurationOnly {}

const unusedAnswers: AnswerStore = { keep: () => undefined, find: () => undefined, close: () => undefined };
const noCandidates: SweepCandidates = { caughtUp: async () => undefined, openInvocations: () => [], organizationsWithOpenHolds: () => [] };

/** The invocations' ports filled by hand, as an embedding of the core alone would. */
@Module({
  providers: [
    { provide: ANSWER_STORE, useValue: unusedAnswers },
    { provide: IDEMPOTENCY_SECRET, useValue: Buffer.from('feature-modules-spec') },
    { provide: RECOVERY_SETTINGS, useValue: { intervalMs: 0, staleAfterMs: 1_000 } },
    { provide: SWEEP_CANDIDATES, useValue: noCandidates },
  ],
  exports: [ANSWER_STORE, IDEMPOTENCY_SECRET, RECOVERY_SETTINGS, SWEEP_CANDIDATES],
})
class HandMadeInvocationPorts {}

const observability = ObservabilityModule.register({ readSide: ReadSideModule });

/** Each feature module, and a class it owns (a handler, a service or a controller) that it must build. */
const FEATURES: readonly (readonly [string, Type | DynamicModule, Type])[] = [
  ['CatalogModule', CatalogModule, PublishOperationHandler],
  ['AccountsModule', AccountsModule, GrantCreditsHandler],
  ['InvocationsModule', InvocationsModule.register({ ports: [HandMadeInvocationPorts] }), RunOperationHandler],
  ['QueriesModule', QueriesModule.register({ readSide: ReadSideModule }), GetUsageHandler],
  ['LedgerEventsModule', LedgerEventsModule, CommittedEventsPublisher],
  ['AlertsModule', AlertsModule, SetAlertThresholdsHandler],
  ['ObservabilityModule', observability, LedgerMetrics],
  ['WebhooksModule', WebhooksModule, WebhooksService],
  ['GatewayModule', GatewayModule, GatewayCalls],
  ['CoreHttpModule', CoreHttpModule.register({ readSide: ReadSideModule }), HealthController],
  ['AlertsHttpModule', AlertsHttpModule, AlertsController],
  ['WebhooksHttpModule', WebhooksHttpModule, WebhooksController],
  ['ObservabilityHttpModule', ObservabilityHttpModule.register({ observability }), MetricsController],
  ['GatewayAdminHttpModule', GatewayAdminHttpModule, RateCardController],
];

describe('feature modules (docs/architecture.md): each importable on its own, over the foundations alone', () => {
  it.each(FEATURES)('%s compiles beside the configuration and the foundations, and builds what it owns', async (_name, feature, owned) => {
    const moduleRef = await Test.createTestingModule({ imports: [ConfigurationOnly, LedgerFoundationsModule, CqrsModule.forRoot(), feature] }).compile();
    try {
      expect(moduleRef.get(owned, { strict: false })).toBeInstanceOf(owned);
    } finally {
      await moduleRef.close();
    }
  });

  it('the invocations module builds its recovery from the ports it is given, nothing global', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [ConfigurationOnly, LedgerFoundationsModule, CqrsModule.forRoot(), InvocationsModule.register({ ports: [HandMadeInvocationPorts] })],
    }).compile();
    try {
      expect(moduleRef.get(InvocationRecovery, { strict: false }).enabled).toBe(false);
    } finally {
      await moduleRef.close();
    }
  });

  it('without the foundations a feature module does not compile: what it takes from the root is named', async () => {
    await expect(Test.createTestingModule({ imports: [ConfigurationOnly, CqrsModule.forRoot(), CatalogModule] }).compile()).rejects.toThrow(/EVENT_STORE|CLOCK/);
  });

  it('without its ports the invocations module does not compile', async () => {
    await expect(
      Test.createTestingModule({ imports: [ConfigurationOnly, LedgerFoundationsModule, CqrsModule.forRoot(), InvocationsModule.register({ ports: [] })] }).compile(),
    ).rejects.toThrow(/ANSWER_STORE|IDEMPOTENCY_SECRET|RECOVERY_SETTINGS|SWEEP_CANDIDATES/);
  });
});
