import type { INestApplication } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test, type TestingModule } from '@nestjs/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { GrantCreditsCommand } from '../../src/accounts/account-commands';
import { PublishOperationCommand } from '../../src/catalog/publish-operation.command';
import { LedgerModule } from '../../src/composition/ledger.module';
import { LedgerFeaturesModule } from '../../src/features/ledger-features.module';
import { scriptedToolUse } from '../../src/runtime';
import { publication } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

const OPERATION = 'support.triage-ticket';
const feature = scriptedFeature(OPERATION, () => [
  scriptedToolUse([{ id: 'answer', name: 'submit_answer', input: { value: 42 } }], { usage: usage(1_000, 100) }),
]);
const SYSTEM = { Authorization: 'Bearer ops-token' };

/**
 * The standalone service serves the API on Fastify with its own body reader (test/http covers it);
 * an embedding product mounts the same controllers on its own application, with Nest's default body
 * parser. Their guards, filter and the routes that write the response themselves (the event stream,
 * the CSV statement, the metrics, a 202) must work on either platform.
 */
const PLATFORMS: ReadonlyArray<readonly [string, (moduleRef: TestingModule) => INestApplication]> = [
  ['Express (Nest’s default platform)', (moduleRef) => moduleRef.createNestApplication({ logger: false })],
  ['Fastify', (moduleRef) => moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false })],
];

describe.each(PLATFORMS)('docs/embedding.md the HTTP API (docs/http.md) embedded in an application on %s', (_platform, create) => {
  let directory: string;
  let app: INestApplication;
  let server: ReturnType<INestApplication['getHttpServer']>;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-platform-'));
    const moduleRef = await Test.createTestingModule({
      imports: [
        LedgerModule.forRoot({ store: `sqlite:${join(directory, 'ledger.sqlite')}`, env: {}, http: { prefix: 'ledger', tokens: { 'ops-token': { role: 'system' } } } }),
        LedgerFeaturesModule.register(feature),
      ],
    }).compile();
    app = create(moduleRef);
    await app.init();
    // Fastify serves its routes once its plugins are loaded; Express has no such step.
    await (app.getHttpAdapter().getInstance() as { ready?: () => Promise<unknown> }).ready?.();
    server = app.getHttpServer();
    const commands = app.get(CommandBus);
    await commands.execute(new PublishOperationCommand(OPERATION, publication()));
    await commands.execute(new GrantCreditsCommand('acme', 10_000, 'funding', 'grant-1'));
  });

  afterAll(async () => {
    await app.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('runs an invocation and answers it, then streams its lifecycle as Server-Sent Events up to settlement', async () => {
    const ran = await request(server).post('/ledger/v1/invocations').set(SYSTEM).send({ operationId: OPERATION, organizationId: 'acme', input: {} }).expect(200);
    expect(ran.body).toMatchObject({ state: 'settled', outcome: 'completed', answer: { value: 42 } });
    const events = await request(server).get(`/ledger/v1/invocations/${ran.body.invocationId}/events`).set(SYSTEM).expect(200);
    expect(events.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const types = [...events.text.matchAll(/^event: (\S+)$/gm)].map((match) => match[1]);
    expect(types[0]).toBe('InvocationEstimated');
    expect(types[types.length - 1]).toBe('InvocationSettled');
  });

  it('answers 202 with a Location under http.prefix for Prefer: respond-async (docs/http.md)', async () => {
    const accepted = await request(server)
      .post('/ledger/v1/invocations')
      .set({ ...SYSTEM, Prefer: 'respond-async' })
      .send({ operationId: OPERATION, organizationId: 'acme', input: {} })
      .expect(202);
    expect(accepted.headers.location).toBe(`/ledger/v1/invocations/${accepted.body.invocationId}`);
    expect(accepted.headers['preference-applied']).toBe('respond-async');
  });

  it('answers errors in the API’s shape: 401 with WWW-Authenticate, 400 naming the field', async () => {
    const unauthenticated = await request(server).get('/ledger/v1/organizations/acme/balance').expect(401);
    expect(unauthenticated.headers['www-authenticate']).toBe('Bearer realm="llm-ledger"');
    expect(unauthenticated.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(unauthenticated.body).toMatchObject({ statusCode: 401, code: 'unauthorized', requestId: expect.any(String) });
    const invalid = await request(server).post('/ledger/v1/invocations').set(SYSTEM).send({ operationId: OPERATION, input: {} }).expect(400);
    expect(invalid.body.fields).toHaveProperty('organizationId');
  });

  it('serves the usage statement as CSV when asked, and the metrics in Prometheus’s text format', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const csv = await request(server).get(`/ledger/v1/organizations/acme/usage?from=${today}&to=${today}`).set({ ...SYSTEM, Accept: 'text/csv' }).expect(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.text.split('\n')[0]).toContain('credits');
    const metrics = await request(server).get('/ledger/metrics').set(SYSTEM).expect(200);
    expect(metrics.headers['content-type']).toContain('text/plain');
    expect(metrics.text).toContain('# TYPE');
  });
});
