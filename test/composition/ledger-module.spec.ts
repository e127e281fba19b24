import { Body, Controller, Get, Injectable, Module, NotFoundException, Post, type INestApplication } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Test } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { GrantCreditsCommand } from '../../src/accounts/account-commands';
import { PublishOperationCommand } from '../../src/catalog/publish-operation.command';
import { LedgerModule } from '../../src/composition/ledger.module';
import { ConfigurationError, LEDGER_CONFIG, type LedgerConfig } from '../../src/config/ledger.config';
import { DEMO_OUTPUT } from '../../src/demo/demo-seed.service';
import { FeatureRegistry } from '../../src/features/feature.registry';
import { LedgerFeaturesModule } from '../../src/features/ledger-features.module';
import type { InvocationSummary } from '../../src/invocations/invocation.state';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { InvocationRecovery } from '../../src/invocations/invocation-recovery';
import { scriptedToolUse } from '../../src/runtime';
import { publication } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { mainThreadNice, threadNiceValues } from '../support/thread-nice';

const feature = scriptedFeature('support.triage-ticket', () => [
  scriptedToolUse([{ id: 'answer', name: 'submit_answer', input: { value: 42 } }], { usage: usage(1_000, 100) }),
]);

@Module({ imports: [LedgerFeaturesModule.register(feature)] })
class TriageModule {}

/** Stands in for the product's own configuration service. */
@Injectable()
class ProductSettings {
  constructor(readonly storeUrl: string) {}
}

@Module({ providers: [{ provide: ProductSettings, useFactory: () => new ProductSettings(`sqlite:${join(directory, 'async.sqlite')}`) }], exports: [ProductSettings] })
class ProductSettingsModule {}

/** A product's own routes, beside the ledger's API: no ledger token, the product's own validation and errors. */
@Controller('product/tickets')
class ProductTicketsController {
  @Post()
  open(@Body() body: Record<string, unknown>): { received: string[] } {
    return { received: Object.keys(body).sort() };
  }

  @Get(':id')
  find(): never {
    throw new NotFoundException('no such ticket');
  }
}

@Module({ controllers: [ProductTicketsController] })
class ProductRoutesModule {}

let directory: string;
let app: INestApplication | undefined;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'llm-ledger-module-'));
});

afterEach(async () => {
  await app?.close();
  app = undefined;
  rmSync(directory, { recursive: true, force: true });
});

async function start(imports: unknown[]): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: imports as never[] }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

async function runTriage(started: INestApplication): Promise<InvocationSummary> {
  const commands = started.get(CommandBus);
  await commands.execute(new PublishOperationCommand('support.triage-ticket', publication()));
  await commands.execute(new GrantCreditsCommand('acme', 10_000, 'funding', 'grant-1'));
  return commands.execute(new RunOperationCommand({ operationId: 'support.triage-ticket', organizationId: 'acme', input: {} }));
}

describe('LedgerModule.forRoot / forRootAsync: the package a NestJS application embeds (docs/embedding.md)', () => {
  it('embeds without HTTP or the demo by default, even when the environment asks for the demo', async () => {
    const started = await start([
      LedgerModule.forRoot({ store: `sqlite:${join(directory, 'ledger.sqlite')}`, env: { LEDGER_DEMO: '1', LEDGER_STORE: 'sqlite:/nonexistent/x.sqlite' } }),
      TriageModule,
    ]);
    const config = started.get<LedgerConfig>(LEDGER_CONFIG);
    // The option wins over its variable.
    expect(config.store).toEqual({ kind: 'sqlite', path: join(directory, 'ledger.sqlite') });
    expect(config.demo).toBe(false);
    expect(started.get(FeatureRegistry).operationIds()).toEqual(['support.triage-ticket']);
    await request(started.getHttpServer()).get('/health/live').expect(404);
    expect(await runTriage(started)).toMatchObject({ state: 'settled', outcome: 'completed' });
  });

  it('falls back to each option’s environment variable', async () => {
    const started = await start([
      LedgerModule.forRoot({ env: { LEDGER_STORE: `sqlite:${join(directory, 'env.sqlite')}`, LEDGER_PROJECTIONS_THREAD: 'main' } }),
    ]);
    expect(started.get<LedgerConfig>(LEDGER_CONFIG)).toMatchObject({
      store: { kind: 'sqlite', path: join(directory, 'env.sqlite') },
      projectionsThread: 'main',
    });
  });

  it('runs its projection worker thread at LEDGER_PROJECTIONS_NICE on Linux (the service\'s own threads keep their priority)', async () => {
    const threadsAt = (nice: number): number => threadNiceValues().filter((value) => value === nice).length;
    expect(process.platform).toBe('linux');
    const before = threadsAt(15);
    const mainBefore = mainThreadNice();
    await start([LedgerModule.forRoot({ store: `sqlite:${join(directory, 'nice.sqlite')}`, env: { LEDGER_PROJECTIONS_NICE: '15' } })]);
    expect(app!.get<LedgerConfig>(LEDGER_CONFIG).projectionsNice).toBe(15);
    expect(threadsAt(15)).toBe(before + 1);
    expect(mainThreadNice()).toBe(mainBefore);
  });

  it('runs recovery on start and on a period by default; recovery: false, or its variable at 0, turns it off (issue 24)', async () => {
    const on = await start([LedgerModule.forRoot({ store: `sqlite:${join(directory, 'on.sqlite')}`, recovery: { intervalMs: 5_000, staleAfterMs: 2_000 }, env: {} })]);
    expect(on.get<LedgerConfig>(LEDGER_CONFIG).recovery).toEqual({ intervalMs: 5_000, staleAfterMs: 2_000 });
    expect(on.get(InvocationRecovery).enabled).toBe(true);
    await on.close();
    app = undefined;
    const off = await start([LedgerModule.forRoot({ store: `sqlite:${join(directory, 'off.sqlite')}`, recovery: false, env: { LEDGER_RECOVERY_INTERVAL_MS: '5000' } })]);
    expect(off.get(InvocationRecovery).enabled).toBe(false);
    expect(off.get(InvocationRecovery).passes).toBe(0);
  });

  it('takes its options from a factory with forRootAsync, injecting the application’s own providers', async () => {
    const started = await start([
      LedgerModule.forRootAsync({
        imports: [ProductSettingsModule],
        inject: [ProductSettings],
        useFactory: (settings: ProductSettings) => ({ store: settings.storeUrl, env: {} }),
      }),
      TriageModule,
    ]);
    expect(started.get<LedgerConfig>(LEDGER_CONFIG).store).toEqual({ kind: 'sqlite', path: join(directory, 'async.sqlite') });
    expect(await runTriage(started)).toMatchObject({ state: 'settled', outcome: 'completed' });
  });

  it('mounts the HTTP API when asked, under its prefix and with the tokens given', async () => {
    const started = await start([
      LedgerModule.forRoot({
        store: `sqlite:${join(directory, 'ledger.sqlite')}`,
        env: {},
        http: { prefix: 'ledger', tokens: { 'ops-token': { role: 'system' } } },
      }),
    ]);
    const server = started.getHttpServer();
    await request(server).get('/ledger/health/live').expect(200);
    await request(server).get('/ledger/v1/organizations/acme/balance').expect(401);
    // The token is honoured: past authentication, an organization with no account reads as unknown.
    await request(server).get('/ledger/v1/organizations/acme/balance').set('Authorization', 'Bearer ops-token').expect(404);
    await request(server).get('/health/live').expect(404);
  });

  it("leaves the embedding application's own routes to their own rules when the HTTP API is on", async () => {
    const started = await start([
      LedgerModule.forRoot({ store: `sqlite:${join(directory, 'ledger.sqlite')}`, env: {}, http: { prefix: 'ledger', tokens: { 'ops-token': { role: 'system' } } } }),
      ProductRoutesModule,
    ]);
    const server = started.getHttpServer();
    // No ledger token, a body the ledger's pipe would refuse (an unknown field), and the product's own error.
    await request(server).post('/product/tickets').send({ subject: 'printer on fire', priority: 'high' }).expect(201, { received: ['priority', 'subject'] });
    const refused = await request(server).get('/product/tickets/missing').expect(404);
    expect(refused.body).toEqual({ message: 'no such ticket', error: 'Not Found', statusCode: 404 });
    // The ledger's own routes keep theirs.
    await request(server).get('/ledger/v1/organizations/acme/balance').expect(401);
    const unknown = await request(server).get('/ledger/v1/organizations/acme/balance').set('Authorization', 'Bearer ops-token').expect(404);
    expect(unknown.body).toMatchObject({ error: 'Not Found', message: expect.stringContaining('acme'), requestId: expect.any(String) });
  });

  it('prints the demo banner with its routes under http.prefix, and its curl lines answer there', async () => {
    const printed: string[] = [];
    const moduleRef = await Test.createTestingModule({
      imports: [LedgerModule.forRoot({ store: `sqlite:${join(directory, 'ledger.sqlite')}`, env: {}, http: { prefix: '/ledger/' }, demo: true })],
    })
      .overrideProvider(DEMO_OUTPUT)
      .useValue((text: string) => printed.push(text))
      .compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const server = app.getHttpServer();
    // The banner is printed once the server listens: supertest's first request makes it listen.
    await request(server).get('/ledger/health/live').expect(200);
    expect(printed).toHaveLength(1);
    const banner = printed[0]!;
    const run = /curl -s -X POST http:\/\/localhost:\d+(\S+) -H 'Authorization: Bearer (\S+)' -H 'Content-Type: application\/json' -d '([^']+)'/.exec(banner);
    expect(run?.[1]).toBe('/ledger/v1/invocations');
    const answered = await request(server).post(run![1]!).set('Authorization', `Bearer ${run![2]!}`).send(JSON.parse(run![3]!)).expect(200);
    expect(answered.body).toMatchObject({ state: 'settled', outcome: 'completed' });
    const reads = [...banner.matchAll(/curl -s http:\/\/localhost:\d+(\S+) -H 'Authorization: Bearer (\S+)'/g)];
    expect(reads.map((match) => match[1])).toEqual([
      '/ledger/v1/invocations/$ID/explanation',
      '/ledger/v1/invocations/$ID/attempts',
      '/ledger/v1/organizations/demo-org/balance',
    ]);
    for (const [, path, token] of reads) {
      await request(server).get(path!.replace('$ID', answered.body.invocationId)).set('Authorization', `Bearer ${token!}`).expect(200);
    }
  });

  it('registers the demo operation when the demo is asked for in code', async () => {
    const started = await start([LedgerModule.forRoot({ store: `sqlite:${join(directory, 'ledger.sqlite')}`, env: {}, demo: true })]);
    expect(started.get(FeatureRegistry).operationIds()).toEqual(['demo.arithmetic']);
  });

  it('refuses a bad option under its variable’s name, before serving', async () => {
    await expect(start([LedgerModule.forRoot({ store: 'mysql://x', env: {} })])).rejects.toThrow(ConfigurationError);
    await expect(start([LedgerModule.forRoot({ store: 'mysql://x', env: {} })])).rejects.toThrow(/LEDGER_STORE: unsupported store URL/);
  });
});
