/**
 * Fuzzes every route of the OpenAPI document (`/docs-json`) with bad inputs derived from it: path ids
 * of the wrong charset and length, each body field of the wrong type, out of its bounds or null,
 * unknown and prototype-named keys, nesting past the bound, bodies that fail to decompress and
 * encodings that are not supported. Seeded (FUZZ_SEED) and bounded (MAX_FUZZ_REQUESTS) so it runs in
 * `npm test`. For every request: no 5xx; every 4xx in the one error shape, a 400 naming its fields;
 * and nothing appended to the log for a refused request.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { Prng } from '../../src/simulation/prng';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';

const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 13);
/** Requests sent in all, across every route. */
const MAX_FUZZ_REQUESTS = 900;

type Schema = { type?: string; $ref?: string; properties?: Record<string, Schema>; required?: string[]; enum?: unknown[]; minimum?: number; maximum?: number; example?: unknown; items?: Schema; allOf?: Schema[] };
interface Operation {
  readonly method: string;
  readonly path: string;
  readonly bodySchema?: Schema;
}
interface Sent {
  readonly description: string;
  readonly status: number;
  readonly body: string;
}

const BAD_IDS = ['%00', '%24all', 'a'.repeat(129), 'o'.repeat(191), '..%2F..%2Fetc%2Fpasswd', '%E0%A4%A', 'white%20space', '__proto__', '%F0%9F%92%A5'];
const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty'];

describe('fuzzing every route of the OpenAPI document (SPEC §11): no 5xx, every 4xx in the error shape, nothing written', () => {
  let ledger: HttpLedger;
  let port: number;
  let store: EventStore;
  let operations: Operation[];
  let schemas: Record<string, Schema>;

  beforeAll(async () => {
    ledger = await startHttpLedger();
    await ledger.app.listen(0, '127.0.0.1');
    port = (ledger.app.getHttpServer().address() as AddressInfo).port;
    store = ledger.app.get<EventStore>(EVENT_STORE);
    await ledger.http().put('/v1/operations/demo.arithmetic/publications').set(bearer(TOKENS.system)).send(publicationBody()).expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 5_000, reason: 'plan', idempotencyKey: 'seed' }).expect(200);
    const document = (await ledger.http().get('/docs-json').expect(200)).body as {
      paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>>;
      components: { schemas: Record<string, Schema> };
    };
    schemas = document.components.schemas;
    operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        method: method.toUpperCase(),
        path,
        ...(operation.requestBody?.content?.['application/json']?.schema === undefined ? {} : { bodySchema: operation.requestBody.content['application/json'].schema }),
      })),
    );
  }, 60_000);

  afterAll(() => ledger.close());

  const resolve = (schema: Schema | undefined): Schema | undefined => {
    if (schema?.$ref !== undefined) return schemas[schema.$ref.split('/').pop()!];
    if (schema?.allOf?.length === 1) return resolve(schema.allOf[0]);
    return schema;
  };

  /** A value the schema would accept, as far as the document says. */
  const validOf = (raw: Schema | undefined, depth = 0): unknown => {
    const schema = resolve(raw);
    if (schema === undefined || depth > 4) return 'x';
    if (schema.example !== undefined) return schema.example;
    if (schema.enum !== undefined) return schema.enum[0];
    switch (schema.type) {
      case 'integer':
      case 'number':
        return Math.max(schema.minimum ?? 1, 1_000);
      case 'boolean':
        return true;
      case 'array':
        return [validOf(schema.items, depth + 1)];
      case 'object':
        return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, value]) => [key, validOf(value, depth + 1)]));
      default:
        return 'fuzz-value';
    }
  };

  /** Bad values for a field of this schema. */
  const badValuesOf = (raw: Schema | undefined): unknown[] => {
    const schema = resolve(raw);
    const common: unknown[] = [null, [], {}, 'x'.repeat(300), true];
    switch (schema?.type) {
      case 'integer':
      case 'number':
        return [...common, '5', 1e30, -1e30, 1.5, -1, Number.MAX_SAFE_INTEGER + 2, (schema.maximum ?? 1e12) + 1, (schema.minimum ?? 0) - 1];
      case 'string':
        return [...common, 5, '', ' ', '\u0000', 'é'.repeat(10), '$all'];
      case 'boolean':
        return [...common, 'true', 1];
      default:
        return [...common, 5, 'string'];
    }
  };

  function send(method: string, path: string, body: string | Buffer | undefined, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
    return new Promise((resolvePromise, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { ...bearer(TOKENS.system), ...headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      // An event stream of an unknown invocation answers 404 at once; of a real one, it would stay open.
      req.setTimeout(10_000, () => req.destroy(new Error(`timed out: ${method} ${path}`)));
      if (body !== undefined) req.write(body);
      req.end();
    });
  }

  it(`sends ${MAX_FUZZ_REQUESTS} seeded bad requests over every route and gets no 5xx, no wrong 2xx and no write`, async () => {
    const prng = new Prng(FUZZ_SEED, 'openapi-fuzz');
    const cases: Array<{ route?: string; description: string; method: string; path: string; body?: string | Buffer; headers?: Record<string, string>; wrongIf2xx: boolean }> = [];
    const fill = (path: string, bad?: { name: string; value: string }) =>
      path.replace(/\{(\w+)\}/g, (_all, name: string) => (bad?.name === name ? bad.value : name === 'streamName' ? 'account-acme' : name === 'organizationId' ? 'acme' : 'demo.arithmetic'));

    for (const operation of operations) {
      const params = [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
      for (const name of params) {
        for (const value of BAD_IDS) {
          if (name === 'streamName' && (value === '__proto__' || value === 'white%20space')) continue;
          const base = operation.bodySchema === undefined ? undefined : JSON.stringify(validOf(operation.bodySchema));
          cases.push({ description: `${operation.method} ${operation.path} with ${name}=${value.slice(0, 20)}`, method: operation.method, path: fill(operation.path, { name, value }), ...(base === undefined ? {} : { body: base, headers: { 'Content-Type': 'application/json' } }), wrongIf2xx: true });
        }
      }
      const schema = resolve(operation.bodySchema);
      if (schema === undefined) continue;
      const path = fill(operation.path);
      const valid = validOf(schema) as Record<string, unknown>;
      const json = { 'Content-Type': 'application/json' };
      for (const [field, fieldSchema] of Object.entries(schema.properties ?? {})) {
        for (const bad of badValuesOf(fieldSchema)) {
          cases.push({ description: `${operation.method} ${operation.path} with ${field}=${JSON.stringify(bad)?.slice(0, 30)}`, method: operation.method, path, body: JSON.stringify({ ...valid, [field]: bad }), headers: json, wrongIf2xx: false });
        }
      }
      for (const key of PROTOTYPE_KEYS) {
        cases.push({ description: `${operation.method} ${operation.path} with key ${key}`, method: operation.method, path, body: `{${JSON.stringify(valid).slice(1, -1)},"${key}":{"x":1}}`, headers: json, wrongIf2xx: true });
      }
      cases.push({ description: `${operation.method} ${operation.path} with an unknown field`, method: operation.method, path, body: JSON.stringify({ ...valid, fuzzUnknown: 1 }), headers: json, wrongIf2xx: true });
      cases.push({ description: `${operation.method} ${operation.path} nested 6,000 deep`, method: operation.method, path, body: `{"x":${'['.repeat(6_000)}${']'.repeat(6_000)}}`, headers: json, wrongIf2xx: true });
      cases.push({ description: `${operation.method} ${operation.path} declared br, sent plain`, method: operation.method, path, body: JSON.stringify(valid), headers: { ...json, 'Content-Encoding': 'br' }, wrongIf2xx: true });
      cases.push({ description: `${operation.method} ${operation.path} declared gzip, sent garbage`, method: operation.method, path, body: Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3]), headers: { ...json, 'Content-Encoding': 'gzip' }, wrongIf2xx: true });
      cases.push({ description: `${operation.method} ${operation.path} with Content-Encoding compress`, method: operation.method, path, body: JSON.stringify(valid), headers: { ...json, 'Content-Encoding': 'compress' }, wrongIf2xx: true });
      cases.push({ description: `${operation.method} ${operation.path} not JSON`, method: operation.method, path, body: '{"a":', headers: json, wrongIf2xx: true });
    }
    // A seeded sample within the bound, drawn round-robin over the routes so every route is fuzzed.
    const byRoute = new Map<string, typeof cases>();
    for (const item of cases) {
      const route = item.description.split(' with ')[0]!.split(' nested ')[0]!.split(' declared ')[0]!.split(' not JSON')[0]!;
      byRoute.set(route, [...(byRoute.get(route) ?? []), item]);
    }
    const chosen: typeof cases = [];
    while (chosen.length < MAX_FUZZ_REQUESTS && [...byRoute.values()].some((left) => left.length > 0)) {
      for (const left of byRoute.values()) {
        if (left.length > 0 && chosen.length < MAX_FUZZ_REQUESTS) chosen.push(left.splice(prng.int(0, left.length - 1), 1)[0]!);
      }
    }
    const routes = new Set(operations.map((operation) => `${operation.method} ${operation.path}`));
    expect([...routes].filter((route) => !chosen.some((item) => item.description.startsWith(`${route} `)))).toEqual(
      [...routes].filter((route) => !cases.some((item) => item.description.startsWith(`${route} `)) && !byRoute.has(route)),
    );

    const serverErrors: Sent[] = [];
    const wrong2xx: Sent[] = [];
    const badShapes: Sent[] = [];
    const writes: Sent[] = [];
    for (const item of chosen) {
      const before = await store.headPosition();
      const answer = await send(item.method, item.path, item.body, item.headers);
      const sent = { description: item.description, status: answer.status, body: answer.body.slice(0, 300) };
      if (answer.status >= 500) serverErrors.push(sent);
      if (answer.status < 300 && item.wrongIf2xx) wrong2xx.push(sent);
      if (answer.status >= 400) {
        let body: Record<string, unknown> | undefined;
        try {
          body = JSON.parse(answer.body) as Record<string, unknown>;
        } catch {
          body = undefined;
        }
        const shaped =
          body !== undefined &&
          body.statusCode === answer.status &&
          typeof body.code === 'string' &&
          typeof body.message === 'string' &&
          typeof body.requestId === 'string' &&
          (answer.status !== 400 || (typeof body.fields === 'object' && body.fields !== null && Object.keys(body.fields).length > 0));
        if (!shaped) badShapes.push(sent);
        if ((await store.headPosition()) !== before) writes.push(sent);
      }
    }
    expect(serverErrors).toEqual([]);
    expect(wrong2xx).toEqual([]);
    expect(badShapes).toEqual([]);
    expect(writes).toEqual([]);
  }, 120_000);
});
