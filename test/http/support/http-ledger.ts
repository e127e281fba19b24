import { Module, type DynamicModule } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger } from 'nestjs-pino';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { AppModule } from '../../../src/composition/app.module';
import { DEMO_OUTPUT } from '../../../src/demo/demo-seed.service';
import { CLOCK } from '../../../src/domain/clock.token';
import { systemClock, type Clock } from '../../../src/runtime';
import { LedgerFeaturesModule } from '../../../src/features/ledger-features.module';
import type { OperationFeature } from '../../../src/features/operation-feature';
import { configureHttp, ledgerHttpAdapter } from '../../../src/http-kit/configure-http';
import { LOG_DESTINATION } from '../../../src/logging/service-logging.module';
import { WEBHOOK_RESOLVER, type WebhookResolver } from '../../../src/webhooks/webhook-resolver';
import { FakeResolver } from '../../webhooks/support/fake-resolver';

/** Tokens every HTTP test starts with (LEDGER_TOKENS), one per role and organization it needs. */
export const TOKENS = {
  system: 'test-system-token',
  auditor: 'test-auditor-token',
  acmeAdmin: 'test-acme-admin-token',
  acmeMember: 'test-acme-member-token',
  globexAdmin: 'test-globex-admin-token',
  globexMember: 'test-globex-member-token',
} as const;

export const LEDGER_TOKENS = JSON.stringify({
  [TOKENS.system]: { role: 'system' },
  [TOKENS.auditor]: { role: 'auditor' },
  [TOKENS.acmeAdmin]: { role: 'org_admin', organizationId: 'acme' },
  [TOKENS.acmeMember]: { role: 'org_member', organizationId: 'acme' },
  [TOKENS.globexAdmin]: { role: 'org_admin', organizationId: 'globex' },
  [TOKENS.globexMember]: { role: 'org_member', organizationId: 'globex' },
});

export interface HttpLedger {
  readonly app: NestFastifyApplication;
  readonly directory: string;
  /**
   * Log lines the application wrote, as pino wrote them (the service's logger, main.ts's setup), one
   * JSON object per line.
   */
  readonly logs: string[];
  /** What the demo printed. */
  readonly printed: string[];
  http(): ReturnType<typeof request>;
  close(): Promise<void>;
}

export interface HttpLedgerOptions {
  readonly env?: Record<string, string>;
  readonly features?: readonly OperationFeature[];
  /** Reuse a directory (a restart); a fresh temporary one by default. */
  readonly directory?: string;
  readonly keepDirectory?: boolean;
  /** More HTTP setup after configureHttp and before init, as main.ts adds (e.g. serveConsole). */
  readonly configure?: (app: NestFastifyApplication) => void;
  /** The service's clock (default the system clock). */
  readonly clock?: Clock;
  /**
   * Resolves webhook host names, so that no test asks DNS (default: no name resolves, so a webhook to
   * a name is registered but none of its deliveries connects anywhere).
   */
  readonly webhookResolver?: WebhookResolver;
  /** Providers replaced by a value of the test's (the gateway's upstream, GATEWAY_PROVIDER). */
  readonly overrides?: readonly { readonly token: symbol; readonly value: unknown }[];
}

/**
 * The real application, configured exactly as main.ts configures it (Fastify, configureHttp), on a file-backed
 * SQLite store in a temporary directory.
 */
export async function startHttpLedger(options: HttpLedgerOptions = {}): Promise<HttpLedger> {
  const directory = options.directory ?? mkdtempSync(join(tmpdir(), 'llm-ledger-http-'));
  const imports: DynamicModule[] = options.features?.length ? [featureModule(options.features)] : [];
  const printed: string[] = [];
  const logs: string[] = [];
  let builder = Test.createTestingModule({
    imports: [
      AppModule.forRoot({
        env: { LEDGER_STORE: `sqlite:${join(directory, 'ledger.sqlite')}`, LEDGER_TOKENS, ...options.env },
        imports,
      }),
    ],
  });
  for (const { token, value } of options.overrides ?? []) builder = builder.overrideProvider(token).useValue(value);
  const moduleRef = await builder
    .overrideProvider(DEMO_OUTPUT)
    .useValue((text: string) => printed.push(text))
    .overrideProvider(LOG_DESTINATION)
    .useValue({ write: (line: string) => void logs.push(line.trimEnd()) })
    .overrideProvider(CLOCK)
    .useValue(options.clock ?? systemClock)
    .overrideProvider(WEBHOOK_RESOLVER)
    .useValue(options.webhookResolver ?? new FakeResolver())
    .compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(ledgerHttpAdapter(), { bufferLogs: true, bodyParser: false });
  app.useLogger(app.get(Logger));
  configureHttp(app);
  options.configure?.(app);
  app.enableShutdownHooks();
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return {
    app,
    directory,
    logs,
    printed,
    http: () => request(app.getHttpServer()),
    async close() {
      await app.close();
      if (!options.keepDirectory) rmSync(directory, { recursive: true, force: true });
    },
  };
}

function featureModule(features: readonly OperationFeature[]): DynamicModule {
  @Module({})
  class HttpTestFeaturesModule {}
  return { module: HttpTestFeaturesModule, imports: [LedgerFeaturesModule.register(...features)] };
}

export const bearer = (token: string): { Authorization: string } => ({ Authorization: `Bearer ${token}` });

/** A valid publication body; override what a test is about. */
export function publicationBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    routing: { provider: 'scripted', model: 'scripted-model' },
    limits: { maxTurns: 6, maxToolCalls: 10, totalTimeMs: 60_000, attemptTimeoutMs: 10_000, maxOutputTokens: 1_024, maxAttemptsPerTurn: 3 },
    prices: { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheReadPerMTok: 300_000 },
    creditHold: 1_000,
    enabled: true,
    ...overrides,
  };
}
