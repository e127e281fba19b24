import { INestApplication, Module, type DynamicModule } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrantCreditsCommand, ChangeOrganizationSettingsCommand } from '../../src/accounts/account-commands';
import { AppModule } from '../../src/composition/app.module';
import { PublishOperationCommand, type PublicationRequest } from '../../src/catalog/publish-operation.command';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { LedgerFeaturesModule } from '../../src/features/ledger-features.module';
import type { OperationFeature } from '../../src/features/operation-feature';
import { CLOCK } from '../../src/domain/clock.token';
import { LiveProjections } from '../../src/projection-runner';
import type { Clock } from '../../src/runtime';

export interface LedgerTestApp {
  readonly app: INestApplication;
  readonly commandBus: CommandBus;
  readonly store: EventStore;
  readonly runner: LiveProjections;
  readonly directory: string;
  readonly logPath: string;
  close(): Promise<void>;
}

export interface LedgerTestAppOptions {
  readonly features?: readonly OperationFeature[];
  readonly clock?: Clock;
  readonly env?: Record<string, string>;
  /** Reuse a directory (a restart); a fresh temporary one by default. */
  readonly directory?: string;
  /** Keep the directory when closing (so a test can restart on it). */
  readonly keepDirectory?: boolean;
  /** Replace one provider, e.g. the event store with a fault-injecting wrapper. */
  /** Modules of a consuming application beside the ledger (e.g. one with its own event handlers). */
  readonly imports?: readonly DynamicModule['module'][];
  readonly override?: { provide: unknown; inject?: unknown[]; useFactory: (...args: never[]) => unknown };
}

/** The real application on a file-backed SQLite store in a temporary directory. */
export async function startLedgerApp(options: LedgerTestAppOptions = {}): Promise<LedgerTestApp> {
  const directory = options.directory ?? mkdtempSync(join(tmpdir(), 'llm-ledger-'));
  const logPath = join(directory, 'ledger.sqlite');
  const imports = [...(options.features?.length ? [featureModule(options.features)] : []), ...(options.imports ?? [])];
  let builder = Test.createTestingModule({
    imports: [AppModule.forRoot({ env: { LEDGER_STORE: `sqlite:${logPath}`, ...options.env }, imports })],
  });
  if (options.clock !== undefined) builder = builder.overrideProvider(CLOCK).useValue(options.clock);
  if (options.override !== undefined) {
    const { provide, inject, useFactory } = options.override;
    builder = builder.overrideProvider(provide).useFactory({ factory: useFactory as (...args: unknown[]) => unknown, inject: (inject ?? []) as never[] });
  }
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication({ logger: false });
  app.enableShutdownHooks();
  await app.init();
  return {
    app,
    commandBus: app.get(CommandBus),
    store: app.get<EventStore>(EVENT_STORE),
    runner: app.get(LiveProjections),
    directory,
    logPath,
    async close() {
      await app.close();
      if (!options.keepDirectory) rmSync(directory, { recursive: true, force: true });
    },
  };
}

function featureModule(features: readonly OperationFeature[]): DynamicModule {
  @Module({})
  class TestFeaturesModule {}
  return { module: TestFeaturesModule, imports: [LedgerFeaturesModule.register(...features)] };
}

/** A publication with generous bounds; override what a test is about. */
export function publication(
  overrides: Partial<Omit<PublicationRequest, 'limits'>> & { limits?: Partial<PublicationRequest['limits']> } = {},
): PublicationRequest {
  return {
    routing: { provider: 'scripted', model: 'scripted-model' },
    prices: { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheReadPerMTok: 300_000 },
    creditHold: 1_000,
    enabled: true,
    ...overrides,
    limits: {
      maxTurns: 6,
      maxToolCalls: 10,
      totalTimeMs: 60_000,
      attemptTimeoutMs: 10_000,
      maxOutputTokens: 1_024,
      maxAttemptsPerTurn: 3,
      ...overrides.limits,
    },
  };
}

/** Publishes an operation and funds an organization. */
export async function seed(
  ledger: LedgerTestApp,
  {
    operationId,
    organizationId,
    credits = 100_000,
    maxRunning,
    publication: published = publication(),
  }: { operationId: string; organizationId: string; credits?: number; maxRunning?: number; publication?: PublicationRequest },
): Promise<void> {
  await ledger.commandBus.execute(new PublishOperationCommand(operationId, published));
  if (credits > 0) await ledger.commandBus.execute(new GrantCreditsCommand(organizationId, credits, 'test funding', `seed-${organizationId}`));
  if (maxRunning !== undefined) {
    await ledger.commandBus.execute(new ChangeOrganizationSettingsCommand(organizationId, { maxRunning }));
  }
}
