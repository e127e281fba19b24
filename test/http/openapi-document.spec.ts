/**
 * The OpenAPI document (`/docs-json`) tells the truth about the API (docs/http.md): whole numbers are
 * integers with their bounds, every id states the pattern and length the validation enforces (from
 * the same constants), and every route declares the error answers it can give, in the error shape.
 * The fuzz suite (test/fuzz) then derives its cases from this document.
 */
import { ID_PATTERN, IDEMPOTENCY_KEY_PATTERN_TEXT, MAX_ID_CHARS, MAX_IDEMPOTENCY_KEY_CHARS } from '../../src/domain/field-checks';
import { EVENT_STORE, EventStoreUnavailableError, type EventStore } from '../../src/event-store/event-store.port';
import { LiveProjections } from '../../src/projection-runner';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from './support/http-ledger';
import type { OpenApiParameter, OpenApiSchema } from '../support/openapi-document.types';

type Schema = OpenApiSchema;
type Parameter = OpenApiParameter;
interface Operation {
  readonly parameters?: Parameter[];
  readonly requestBody?: { content: Record<string, { schema: Schema }> };
  readonly responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
  readonly security?: unknown[];
}
interface Document {
  readonly paths: Record<string, Record<string, Operation>>;
  readonly components: { schemas: Record<string, Schema> };
}

/** Fields named like ids, wherever a request carries them. */
const ID_FIELDS = new Set(['organizationId', 'operationId', 'invocationId', 'webhookId']);
const KEY_FIELDS = new Set(['idempotencyKey', 'Idempotency-Key']);
/** Routes answered from the webhook store alone, which neither the event store nor a read model serves. */
const WITHOUT_LOG = new Set(['GET /v1/me', 'GET /v1/organizations/{organizationId}/webhooks', 'DELETE /v1/organizations/{organizationId}/webhooks/{webhookId}', 'GET /v1/organizations/{organizationId}/webhooks/{webhookId}/deliveries']);

/** Routes every role may call: a known token is never refused them (no 403). */
const EVERY_ROLE = new Set(['GET /v1/me']);


/**
 * The ledger's own routes. The gateway's `/anthropic` routes pass Anthropic's Messages API through, in
 * Anthropic's error shape and with its schemas; test/gateway/gateway-openapi.spec.ts checks them.
 */
function ledgerPaths<T>(paths: Record<string, T>): [string, T][] {
  return Object.entries(paths).filter(([path]) => !path.startsWith('/anthropic'));
}

describe('the OpenAPI document states what the validation enforces and every answer a route gives (docs/http.md)', () => {
  let ledger: HttpLedger;
  let document: Document;
  let operations: Array<{ route: string; method: string; path: string; operation: Operation }>;

  beforeAll(async () => {
    ledger = await startHttpLedger();
    document = (await ledger.http().get('/docs-json').expect(200)).body as Document;
    operations = ledgerPaths(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ route: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path, operation })),
    );
  });

  afterAll(() => ledger.close());

  const resolve = (schema: Schema): Schema => {
    if (schema.$ref !== undefined) return document.components.schemas[schema.$ref.split('/').pop()!]!;
    if (schema.allOf?.length === 1) return resolve(schema.allOf[0]!);
    return schema;
  };

  /** Every named field of a schema, nested objects and array items included, as `[path, schema]`. */
  const fieldsOf = (schema: Schema, prefix = '', seen = new Set<Schema>()): Array<[string, Schema]> => {
    const resolved = resolve(schema);
    if (seen.has(resolved)) return [];
    seen.add(resolved);
    if (resolved.items !== undefined) return fieldsOf(resolved.items, `${prefix}[]`, seen);
    return Object.entries(resolved.properties ?? {}).flatMap(([name, field]) => {
      const path = prefix === '' ? name : `${prefix}.${name}`;
      const target = resolve(field);
      return [[path, target] as [string, Schema], ...fieldsOf(field, path, seen)];
    });
  };

  const requestFields = (operation: Operation): Array<[string, Schema]> => [
    ...(operation.parameters ?? []).map((parameter) => [`${parameter.in} ${parameter.name}`, parameter.schema] as [string, Schema]),
    ...Object.values(operation.requestBody?.content ?? {}).flatMap((media) => fieldsOf(media.schema).map(([path, schema]) => [`body ${path}`, schema] as [string, Schema])),
  ];

  it('declares no `number` anywhere: every whole number (credits, limits, counts, revisions) is an `integer`', () => {
    const numbers: string[] = [];
    const walk = (value: unknown, path: string): void => {
      if (value === null || typeof value !== 'object') return;
      if ((value as Schema).type === 'number') numbers.push(path);
      for (const [key, inner] of Object.entries(value)) walk(inner, `${path}/${key}`);
    };
    walk(document, '');
    expect(numbers).toEqual([]);
  });

  it('bounds every integer a request carries: a minimum always, and a maximum unless it is a 64-bit stream revision', () => {
    const unbounded = operations.flatMap(({ route, operation }) =>
      requestFields(operation)
        .filter(([, schema]) => schema.type === 'integer')
        .filter(([name, schema]) => schema.minimum === undefined || (schema.maximum === undefined && name !== 'query from' && name !== 'header Last-Event-ID'))
        .map(([name]) => `${route}: ${name}`),
    );
    expect(unbounded).toEqual([]);
  });

  it('states on every path parameter its pattern and length bounds', () => {
    const parameters = operations.flatMap(({ route, operation }) => (operation.parameters ?? []).filter((parameter) => parameter.in === 'path').map((parameter) => ({ route, parameter })));
    expect(parameters.length).toBeGreaterThan(20);
    const unstated = parameters.filter(({ parameter }) => parameter.schema.pattern === undefined || parameter.schema.maxLength === undefined || parameter.schema.minLength !== 1);
    expect(unstated.map(({ route, parameter }) => `${route}: ${parameter.name}`)).toEqual([]);
  });

  it('states every id and idempotency key, in a path, a query, a header or a body, exactly as the validation checks it', () => {
    const ids = operations.flatMap(({ route, operation }) => requestFields(operation).map(([name, schema]) => ({ where: `${route}: ${name}`, field: name.split(/[ .]/).pop()!, schema })));
    const idFields = ids.filter(({ field }) => ID_FIELDS.has(field));
    const keyFields = ids.filter(({ field }) => KEY_FIELDS.has(field));
    expect(idFields.length).toBeGreaterThan(20);
    expect(keyFields.map(({ where }) => where).sort()).toEqual([
      'POST /v1/invocations: body idempotencyKey',
      'POST /v1/invocations: header Idempotency-Key',
      'POST /v1/organizations/{organizationId}/adjustments: body idempotencyKey',
      'POST /v1/organizations/{organizationId}/grants: body idempotencyKey',
    ]);
    for (const { where, schema } of idFields) expect({ where, ...pick(schema) }).toEqual({ where, type: 'string', minLength: 1, maxLength: MAX_ID_CHARS, pattern: ID_PATTERN.source });
    for (const { where, schema } of keyFields) {
      expect({ where, ...pick(schema) }).toEqual({ where, type: 'string', minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_CHARS, pattern: IDEMPOTENCY_KEY_PATTERN_TEXT });
    }
  });

  it('declares on every route the error answers it can give, each with the error shape', () => {
    const missing: string[] = [];
    const expectAnswers = (route: string, operation: Operation, statuses: readonly string[]): void => {
      for (const status of statuses) if (operation.responses[status] === undefined) missing.push(`${route}: ${status}`);
    };
    for (const { route, method, path, operation } of operations) {
      expectAnswers(route, operation, ['400', '408', '431']);
      if (operation.security !== undefined) expectAnswers(route, operation, EVERY_ROLE.has(route) ? ['401'] : ['401', '403']);
      if ((operation.parameters ?? []).some((parameter) => parameter.in !== 'header') || operation.requestBody !== undefined) expectAnswers(route, operation, ['400']);
      // The JSON body parser answers every POST and PUT: too large, not JSON, an encoding it cannot read.
      if (method === 'POST' || method === 'PUT') expectAnswers(route, operation, ['400', '409', '413', '415']);
      if ((path.startsWith('/v1/') || path === '/metrics') && !WITHOUT_LOG.has(route)) expectAnswers(route, operation, ['503']);
    }
    expect(missing).toEqual([]);

    const unshaped = operations.flatMap(({ route, operation }) =>
      Object.entries(operation.responses)
        .filter(([status]) => Number(status) >= 400 && !(route.startsWith('GET /health/') && status === '503'))
        .filter(([, response]) => response.content?.['application/json']?.schema.$ref !== '#/components/schemas/ErrorBodyDto')
        .map(([status]) => `${route}: ${status}`),
    );
    expect(unshaped).toEqual([]);
  });

  it('issue 24, finding 5: declares on every route what any request may get before the route sees it (400, 408, 431), and a 2xx', () => {
    const missing = operations.flatMap(({ route, operation }) => [
      ...['400', '408', '431'].filter((status) => operation.responses[status] === undefined).map((status) => `${route}: ${status}`),
      ...(Object.keys(operation.responses).some((status) => status.startsWith('2')) ? [] : [`${route}: 2xx`]),
    ]);
    expect(missing).toEqual([]);
  });

  it('issue 24, finding 5: declares 413 and 415 on no DELETE, which takes no body (400 naming `body` instead)', () => {
    const deletes = operations.filter(({ method }) => method === 'DELETE');
    expect(deletes.length).toBeGreaterThanOrEqual(2);
    expect(deletes.filter(({ operation }) => operation.responses['413'] !== undefined || operation.responses['415'] !== undefined).map(({ route }) => route)).toEqual([]);
    expect(deletes.filter(({ operation }) => operation.responses['400'] === undefined).map(({ route }) => route)).toEqual([]);
  });

  it('declares required every query parameter a route refuses to do without', async () => {
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 5, reason: 'plan', idempotencyKey: 'seed' }).expect(200);
    const undeclared: string[] = [];
    let asked = 0;
    for (const { route, method, path, operation } of operations) {
      const queries = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query');
      if (method !== 'GET' || queries.length === 0) continue;
      asked++;
      const response = await ledger.http().get(path.replace('{organizationId}', 'acme').replace('{streamName}', 'account-acme')).set(bearer(TOKENS.system));
      const missing = response.status === 400 ? Object.keys(response.body.fields as object) : [];
      for (const name of missing) {
        const parameter = queries.find((query) => query.name === name);
        if (parameter !== undefined && parameter.required !== true) undeclared.push(`${route}: ${name}`);
      }
    }
    expect(asked).toBeGreaterThanOrEqual(4);
    expect(undeclared).toEqual([]);
  });

  it('declares 422 exactly where an idempotency key can be reused for another request', () => {
    expect(operations.filter(({ operation }) => operation.responses['422'] !== undefined).map(({ route }) => route).sort()).toEqual([
      'POST /v1/invocations',
      'POST /v1/organizations/{organizationId}/adjustments',
      'POST /v1/organizations/{organizationId}/grants',
    ]);
  });

  it('documents each event-stream message as the public progress shape, with no idempotency key or fingerprint in it', () => {
    const progress = document.components.schemas['InvocationProgressDto']!;
    expect(Object.keys(progress.properties!)).toEqual(expect.arrayContaining(['type', 'revision', 'time', 'state', 'invocationId']));
    expect(Object.keys(progress.properties!)).not.toEqual(expect.arrayContaining(['idempotencyKey']));
    expect(Object.keys(progress.properties!)).not.toContain('requestFingerprint');
    expect(progress.properties!['revision']).toMatchObject({ type: 'integer', minimum: 0 });
  });
});

function pick(schema: Schema): Schema {
  const { type, minLength, maxLength, pattern } = schema;
  return { type, minLength, maxLength, pattern } as Schema;
}

describe('the OpenAPI document declares 503 wherever the service gives it: with the event store and the read models down', () => {
  it('answers every route with valid input as declared, 503 only where the document says so and never a 500', async () => {
    const ledger = await startHttpLedger();
    const restore = new Map<string, unknown>();
    const store = ledger.app.get<EventStore>(EVENT_STORE) as unknown as Record<string, unknown>;
    try {
      await ledger.http().put('/v1/operations/demo.arithmetic/publications').set(bearer(TOKENS.system)).send(publicationBody()).expect(200);
      await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 5_000, reason: 'plan', idempotencyKey: 'seed' }).expect(200);
      const invocation = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.system)).send({ operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'What is 6*7?' } }).expect(200);
      const webhook = await ledger.http().post('/v1/organizations/acme/webhooks').set(bearer(TOKENS.system)).send({ url: 'https://example.com/hooks/ledger', events: ['InvocationSettled'] }).expect(200);
      const ids: Record<string, string> = { organizationId: 'acme', operationId: 'demo.arithmetic', streamName: 'account-acme', invocationId: invocation.body.invocationId, webhookId: webhook.body.webhookId };
      const document = (await ledger.http().get('/docs-json').expect(200)).body as Document;

      // The read models stop and every call to the store fails as an unreachable store's do.
      await ledger.app.get(LiveProjections).stop();
      for (const name of ['append', 'readStream', 'streamRevision', 'headPosition', 'readAll']) {
        if (typeof store[name] !== 'function') continue;
        restore.set(name, store[name]);
        store[name] = () => Promise.reject(new EventStoreUnavailableError(name, 'the store does not answer (test)'));
      }

      const bodies: Record<string, unknown> = {
        'PUT /v1/operations/{operationId}/publications': publicationBody(),
        'POST /v1/organizations/{organizationId}/grants': { credits: 5, reason: 'r', idempotencyKey: 'k2' },
        'POST /v1/organizations/{organizationId}/adjustments': { credits: 5, reason: 'r', idempotencyKey: 'k3' },
        'PUT /v1/organizations/{organizationId}/settings': { maxRunning: 3 },
        'POST /v1/invocations': { operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'What is 1+1?' } },
        'POST /v1/settlements/sweep': { olderThanMs: 600_000 },
        'PUT /v1/organizations/{organizationId}/alerts': { thresholds: [{ kind: 'available_below', credits: 10 }] },
        'POST /v1/organizations/{organizationId}/webhooks': { url: 'https://example.com/hooks/2', events: ['InvocationSettled'] },
      };
      const queries: Record<string, string> = { 'GET /v1/organizations/{organizationId}/usage': '?from=2026-12-01&to=2026-12-02' };
      const undeclared: string[] = [];
      let unavailable = 0;
      for (const [path, methods] of ledgerPaths(document.paths)) {
        for (const [method, operation] of Object.entries(methods)) {
          const route = `${method.toUpperCase()} ${path}`;
          // Served from the webhook store alone; deleting the webhook would only take it from the later routes.
          if (route === 'DELETE /v1/organizations/{organizationId}/webhooks/{webhookId}') continue;
          const url = path.replace(/\{(\w+)\}/g, (_all, name: string) => encodeURIComponent(ids[name]!)) + (queries[route] ?? '');
          const call = ledger.http()[method as 'get' | 'post' | 'put'](url).set(bearer(TOKENS.system));
          const response = route.endsWith('/events') ? await call.buffer(true).timeout(5_000).catch((error: { status?: number; response?: { status: number } }) => ({ status: error.response?.status ?? 0 })) : bodies[route] === undefined ? await call : await call.send(bodies[route] as object);
          if (response.status === 503) unavailable++;
          if (response.status >= 500 && (response.status !== 503 || operation.responses['503'] === undefined)) undeclared.push(`${route}: ${response.status}`);
        }
      }
      expect(undeclared).toEqual([]);
      expect(unavailable).toBeGreaterThan(15);
    } finally {
      for (const [name, original] of restore) store[name] = original;
      await ledger.close();
    }
  }, 60_000);
});
