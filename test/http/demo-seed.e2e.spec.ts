import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEMO_GRANT_CREDITS, DEMO_OPERATION_ID, DEMO_ORGANIZATION_ID } from '../../src/demo/demo-catalog';
import { demoBanner } from '../../src/demo/demo-banner';
import { bearer, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

const DEMO = {
  system: 'demo-system-token',
  auditor: 'demo-auditor-token',
  admin: 'demo-admin-token',
  member: 'demo-member-token',
} as const;

/** LEDGER_TOKENS for these tests: an operator token of its own, and one string that is also a demo token. */
const CONFIGURED_TOKENS = JSON.stringify({
  'ops-own-token': { role: 'system' },
  // Configuration wins: this string is a demo token, but here it belongs to another organization's member.
  [DEMO.auditor]: { role: 'org_member', organizationId: 'initech' },
});

describe('LEDGER_DEMO=1 seeding (README.md "The demo"): the demo catalog, organization and tokens, added beside the configuration and never over the store', () => {
  let directory: string;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-demo-'));
  });

  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  const start = (env: Record<string, string> = {}) =>
    startHttpLedger({ directory, keepDirectory: true, env: { LEDGER_DEMO: '1', LEDGER_TOKENS: CONFIGURED_TOKENS, ...env } });

  it('seeds once: a second start on the same directory keeps the first start’s history and grants nothing again', async () => {
    const first = await start();
    const run = await first
      .http()
      .post('/v1/invocations')
      .set(bearer(DEMO.member))
      .send({ operationId: DEMO_OPERATION_ID, organizationId: DEMO_ORGANIZATION_ID, input: { question: 'What is 6*7?' } });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ state: 'settled', outcome: 'completed', publicationVersion: 1 });
    // An operator changes the demo after seeding: a restart must keep that too.
    await first.http().put(`/v1/organizations/${DEMO_ORGANIZATION_ID}/settings`).set(bearer(DEMO.system)).send({ maxRunning: 3 }).expect(200);
    await first.close();

    const second = await start();
    try {
      const operation = await second.http().get(`/v1/streams/operation-${DEMO_OPERATION_ID}`).set(bearer(DEMO.system)).expect(200);
      expect(operation.body.events.map((e: { type: string }) => e.type)).toEqual(['OperationPublished']);
      const account = await second.http().get(`/v1/streams/account-${DEMO_ORGANIZATION_ID}`).set(bearer(DEMO.system)).expect(200);
      expect(account.body.events.filter((e: { type: string }) => e.type === 'CreditsGranted')).toHaveLength(1);
      expect(account.body.events.filter((e: { type: string }) => e.type === 'OrganizationSettingsChanged')).toHaveLength(1);

      const balance = await second.http().get(`/v1/organizations/${DEMO_ORGANIZATION_ID}/balance`).set(bearer(DEMO.admin)).expect(200);
      expect(balance.body).toMatchObject({ granted: DEMO_GRANT_CREDITS, charged: run.body.charge, available: DEMO_GRANT_CREDITS - run.body.charge });
      const earlier = await second.http().get(`/v1/invocations/${run.body.invocationId}`).set(bearer(DEMO.member)).expect(200);
      expect(earlier.body).toMatchObject({ state: 'settled', charge: run.body.charge });
    } finally {
      await second.close();
    }
  });

  it('keeps a publication an operator made before the demo started, instead of publishing its own', async () => {
    const plain = await startHttpLedger({ directory, keepDirectory: true });
    await plain.http().put(`/v1/operations/${DEMO_OPERATION_ID}/publications`).set(bearer(TOKENS.system)).send(publicationBody({ creditHold: 42 })).expect(200);
    await plain.close();

    const demo = await start();
    try {
      const history = await demo.http().get(`/v1/operations/${DEMO_OPERATION_ID}/publications`).set(bearer(DEMO.system)).expect(200);
      expect(history.body.versions).toHaveLength(1);
      expect(history.body.versions[0]).toMatchObject({ version: 1, creditHold: 42 });
    } finally {
      await demo.close();
    }
  });

  it('honours LEDGER_TOKENS beside the demo tokens, and lets a configured token keep its own grant', async () => {
    const demo = await start();
    try {
      // The operator's own token works with the demo on.
      await demo.http().get(`/v1/streams/account-${DEMO_ORGANIZATION_ID}`).set(bearer('ops-own-token')).expect(200);
      // Demo tokens for each role work.
      await demo.http().get(`/v1/streams/account-${DEMO_ORGANIZATION_ID}`).set(bearer(DEMO.system)).expect(200);
      await demo.http().get(`/v1/organizations/${DEMO_ORGANIZATION_ID}/balance`).set(bearer(DEMO.admin)).expect(200);
      expect((await demo.http().get(`/v1/organizations/${DEMO_ORGANIZATION_ID}/balance`).set(bearer(DEMO.member))).status).toBe(403);
      // `demo-auditor-token` is configured as initech's member, so it is not the demo's auditor.
      expect((await demo.http().get(`/v1/streams/account-${DEMO_ORGANIZATION_ID}`).set(bearer(DEMO.auditor))).status).toBe(403);
    } finally {
      await demo.close();
    }
  });

  it('prints its tokens and curl lines once the server listens, leaving out a token the configuration owns', async () => {
    const demo = await start();
    try {
      await demo.http().get('/health/live').expect(200);
      expect(demo.printed).toHaveLength(1);
      const banner = demo.printed[0]!;
      expect(banner).toContain('DEMO ONLY');
      for (const token of [DEMO.system, DEMO.admin, DEMO.member]) expect(banner).toContain(token);
      expect(banner).not.toContain(DEMO.auditor);
      expect(banner).not.toContain('ops-own-token');
      expect(banner).toMatch(/curl -s -X POST http:\/\/localhost:\d+\/v1\/invocations/);
      expect(banner).toContain('/explanation');
    } finally {
      await demo.close();
    }
  });

  it('adds no demo token and seeds nothing when the demo is off', async () => {
    const plain = await startHttpLedger({ directory, keepDirectory: true });
    try {
      expect((await plain.http().get('/health/live')).status).toBe(200);
      expect((await plain.http().get(`/v1/streams/account-${DEMO_ORGANIZATION_ID}`).set(bearer(DEMO.system))).status).toBe(401);
      expect((await plain.http().get(`/v1/streams/account-${DEMO_ORGANIZATION_ID}`).set(bearer(TOKENS.system))).status).toBe(404);
      expect(plain.printed).toEqual([]);
    } finally {
      await plain.close();
    }
  });
});

describe('the demo banner', () => {
  const banner = (routePrefix?: string): string =>
    demoBanner({
      baseUrl: 'http://localhost:4321',
      ...(routePrefix === undefined ? {} : { routePrefix }),
      operationId: 'demo.arithmetic',
      organizationId: 'demo-org',
      routing: 'scripted/demo-arithmetic-model (version 1)',
      tokens: [
        { role: 'org_member', token: 'demo-member-token', organizationId: 'demo-org' },
        { role: 'org_admin', token: 'demo-admin-token', organizationId: 'demo-org' },
      ],
    });

  it('runs the demo operation as the member and reads its explanation with the id it got back', () => {
    const text = banner();
    expect(text).toContain(`ID=$(curl -s -X POST http://localhost:4321/v1/invocations -H 'Authorization: Bearer demo-member-token'`);
    expect(text).toContain(`curl -s http://localhost:4321/v1/invocations/$ID/explanation -H 'Authorization: Bearer demo-member-token'`);
    expect(text).toContain(`curl -s http://localhost:4321/v1/organizations/demo-org/balance -H 'Authorization: Bearer demo-admin-token'`);
  });

  it('names the routes under the HTTP prefix, and the OpenAPI document at the root where it is served', () => {
    const text = banner('/ledger');
    expect(text).toContain('curl -s -X POST http://localhost:4321/ledger/v1/invocations ');
    expect(text).toContain('curl -s http://localhost:4321/ledger/v1/invocations/$ID/attempts ');
    expect(text).not.toMatch(/localhost:4321\/v1\//);
    expect(text).toContain('the API: http://localhost:4321/docs');
  });
});
