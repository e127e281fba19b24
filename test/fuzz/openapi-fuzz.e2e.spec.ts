/**
 * Fuzzes every route of the OpenAPI document (`/docs-json`) with inputs derived from it (docs/http.md):
 * path ids against their declared pattern and length; every body field, nested ones and the
 * feature's `input` included, of the wrong type, out of its declared bounds, off its pattern or null;
 * every query parameter of every GET route the same way, repeated, and unknown ones; unknown and
 * prototype-named keys, nesting past the bound, bodies that fail to decompress and encodings that are
 * not supported. Each is sent as the system token or, seeded, as an organization's admin or member;
 * and every route is also called, with valid input, by a member and an admin of another organization.
 * Values at the declared bounds are sent too: the document's bounds must be the validation's.
 *
 * Issue 24, finding 5 grew it to what an outside attack did: every role's token, no token and a bad
 * one on every route; another organization's ids under an organization's token; empty path ids;
 * header edge cases (a single-valued header twice, a NUL byte sent over a raw socket, values past
 * Node's limit, an over-long token); and every method a path does not declare.
 *
 * Seeded (FUZZ_SEED) and bounded by counts (MAX_FUZZ_REQUESTS), not clocks, so it runs in `npm test`.
 * For every request: its status is one the document declares for the route (a method the document
 * does not list: 404); no 5xx; no 2xx where a refusal is due; every 4xx in the one error shape, a 400
 * naming the field it was about; another tenant gets 403 or 404 and nothing but the error shape; and
 * nothing is appended to the log for a refused request.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { Prng } from '../../src/simulation/prng';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { rawExchange } from '../http/support/raw-http';
import type { OpenApiParameter, OpenApiSchema } from '../support/openapi-document.types';

const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 13);
/** Requests sent in all, across every route. */
const MAX_FUZZ_REQUESTS = 2_500;
/** Deepest a body schema is walked for nested fields, in levels. */
const MAX_FIELD_DEPTH = 4;

type Schema = OpenApiSchema;
type Parameter = OpenApiParameter;
interface Operation {
  readonly method: string;
  readonly path: string;
  readonly parameters: readonly Parameter[];
  readonly bodySchema?: Schema;
  /** The statuses the document declares for the route. */
  readonly declared: ReadonlySet<string>;
}
interface Sent {
  readonly description: string;
  readonly status: number;
  readonly body: string;
}
interface Case {
  /** `METHOD /path` as the document names it: the sample is drawn round-robin over these. */
  readonly route: string;
  readonly description: string;
  readonly method: string;
  readonly path: string;
  readonly token: string;
  readonly body?: string | Buffer;
  /** A header given a list is sent once per value. */
  readonly headers?: Record<string, string | string[]>;
  /** Sent as these bytes over a raw socket, for what Node's client refuses to send (a NUL in a header). */
  readonly raw?: Buffer;
  /** The statuses the answer may have: the route's declared ones (404 for a method no route has). */
  readonly declared: ReadonlySet<string>;
  /** A 2xx would be wrong: the request must be refused. */
  readonly wrongIf2xx: boolean;
  /** A 400 must name this field (or a field within it, or one it is within). */
  readonly field?: string;
  /** A value within the declared bounds: a 400 must not say this field is out of them. */
  readonly withinBounds?: boolean;
  /** Another organization's caller: the answer must be 403 or 404 in the bare error shape. */
  readonly otherTenant?: boolean;
}

const BAD_IDS = ['', '%00', '%24all', 'a'.repeat(129), 'o'.repeat(191), '..%2F..%2Fetc%2Fpasswd', '%E0%A4%A', 'white%20space', '__proto__', '%F0%9F%92%A5'];
const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty'];
/** Characters tried against a declared pattern; those it refuses make bad values. */
const PROBE_CHARACTERS = [' ', '$', '/', '%', '#', '\u0000', '\u007f', 'é', '\u{1F4A5}', '"', '-', '.', 'a'];
/** What Node's HTTP client sends as a header value (tab, printable ASCII and Latin-1). */
const SENDABLE_HEADER = /^[\t\x20-\x7e\x80-\xff]*$/;
const ERROR_SHAPE_KEYS = new Set(['statusCode', 'error', 'code', 'message', 'fields', 'requestId']);
/** What a field's own check says when a value is outside the bounds or type the document declares. */
/** HTTP methods tried on every path; those the document does not list there must be 404. */
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** Headers the API reads as one value (docs/http.md "Requests"): sent twice, each is a 400 naming it. */
const SINGLE_VALUED = ['Authorization', 'Idempotency-Key', 'Last-Event-ID', 'Content-Type'];
/** A header value past Node's 16 KiB header limit, in characters: 431. */
const OVERSIZED_HEADER_CHARS = 17_000;
const BOUND_PROBLEM = /must be (at most|at least|a whole number)|must not be negative|must be an? (integer|number)/;


/**
 * The ledger's own routes. The gateway's `/anthropic` routes pass Anthropic's Messages API through, in
 * Anthropic's error shape and with its schemas; test/gateway/gateway-openapi.spec.ts checks them.
 */
function ledgerPaths<T>(paths: Record<string, T>): [string, T][] {
  return Object.entries(paths).filter(([path]) => !path.startsWith('/anthropic'));
}

describe('fuzzing every route of the OpenAPI document (docs/http.md; issue 24, finding 5): only declared statuses, no 5xx, every 4xx in the error shape naming its field, no tenant crossed, nothing written', () => {
  let ledger: HttpLedger;
  let port: number;
  let store: EventStore;
  let operations: Operation[];
  let schemas: Record<string, Schema>;
  /** Real ids of acme's resources, so another tenant is tried on things that exist. */
  const known: Record<string, string> = { organizationId: 'acme', operationId: 'demo.arithmetic', streamName: 'account-acme' };
  /** The same kinds of ids, globex's: an acme token must get 403 or 404 for every one. */
  const theirs: Record<string, string> = { organizationId: 'globex', operationId: 'demo.arithmetic', streamName: 'account-globex' };
  /** Every path of the document and the methods it declares there. */
  let methodsOf: Map<string, Set<string>>;

  beforeAll(async () => {
    ledger = await startHttpLedger();
    await ledger.app.listen(0, '127.0.0.1');
    port = (ledger.app.getHttpServer().address() as AddressInfo).port;
    store = ledger.app.get<EventStore>(EVENT_STORE);
    await ledger.http().put('/v1/operations/demo.arithmetic/publications').set(bearer(TOKENS.system)).send(publicationBody()).expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 5_000, reason: 'plan', idempotencyKey: 'seed' }).expect(200);
    const invocation = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send({ operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'What is 6*7?' } }).expect(200);
    known.invocationId = invocation.body.invocationId as string;
    const webhook = await ledger.http().post('/v1/organizations/acme/webhooks').set(bearer(TOKENS.system)).send({ url: 'https://example.com/hooks/ledger', events: ['InvocationSettled'] }).expect(200);
    known.webhookId = webhook.body.webhookId as string;
    await ledger.http().post('/v1/organizations/globex/grants').set(bearer(TOKENS.system)).send({ credits: 5_000, reason: 'plan', idempotencyKey: 'seed' }).expect(200);
    const theirInvocation = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.globexMember)).send({ operationId: 'demo.arithmetic', organizationId: 'globex', input: { question: 'What is 6*7?' } }).expect(200);
    theirs.invocationId = theirInvocation.body.invocationId as string;
    const theirWebhook = await ledger.http().post('/v1/organizations/globex/webhooks').set(bearer(TOKENS.system)).send({ url: 'https://example.com/hooks/globex', events: ['InvocationSettled'] }).expect(200);
    theirs.webhookId = theirWebhook.body.webhookId as string;
    const document = (await ledger.http().get('/docs-json').expect(200)).body as {
      paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: Schema }> }; responses?: Record<string, unknown> }>>;
      components: { schemas: Record<string, Schema> };
    };
    schemas = document.components.schemas;
    operations = ledgerPaths(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        method: method.toUpperCase(),
        path,
        parameters: operation.parameters ?? [],
        ...(operation.requestBody?.content?.['application/json']?.schema === undefined ? {} : { bodySchema: operation.requestBody.content['application/json'].schema }),
        declared: new Set(Object.keys(operation.responses ?? {})),
      })),
    );
    methodsOf = new Map(ledgerPaths(document.paths).map(([path, methods]) => [path, new Set(Object.keys(methods).map((method) => method.toUpperCase()))]));
  }, 60_000);

  afterAll(() => ledger.close());

  const resolve = (schema: Schema | undefined): Schema | undefined => {
    if (schema?.$ref !== undefined) return schemas[schema.$ref.split('/').pop()!];
    if (schema?.allOf?.length === 1) return resolve(schema.allOf[0]);
    return schema;
  };

  /** A value the schema accepts, as far as the document says. */
  const validOf = (raw: Schema | undefined, depth = 0): unknown => {
    const schema = resolve(raw);
    if (schema === undefined || depth > MAX_FIELD_DEPTH) return 'x';
    if (schema.example !== undefined) return schema.example;
    if (schema.enum !== undefined) return schema.enum[0];
    switch (schema.type) {
      case 'integer':
      case 'number':
        return Math.min(Math.max(schema.minimum ?? 1, 1_000), schema.maximum ?? Number.MAX_SAFE_INTEGER);
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

  /** Every field of a body schema, nested objects and the keys of an open object's example included. */
  const fieldsOf = (raw: Schema | undefined, prefix: string[] = [], depth = 0): Array<{ path: string[]; schema: Schema }> => {
    const schema = resolve(raw);
    if (schema === undefined || depth > MAX_FIELD_DEPTH) return [];
    const own = Object.entries(schema.properties ?? {});
    // An open object (the feature's `input`) documents its fields by its example.
    const exampled = own.length === 0 && schema.additionalProperties !== undefined && isObject(schema.example) ? Object.entries(schema.example).map(([key, value]) => [key, exampleSchema(value)] as const) : [];
    return [...own, ...exampled].flatMap(([name, field]) => {
      const path = [...prefix, name];
      const resolved = resolve(field) ?? {};
      return [{ path, schema: resolved }, ...(resolved.type === 'object' ? fieldsOf(resolved, path, depth + 1) : [])];
    });
  };

  /** Characters the pattern refuses, for values that must be refused. */
  const offPattern = (pattern: string | undefined): string[] => {
    if (pattern === undefined) return [];
    const regex = new RegExp(pattern);
    return PROBE_CHARACTERS.filter((character) => !regex.test(`a${character}`) || !regex.test(`${character}a`)).map((character) => `a${character}b`).filter((value) => !regex.test(value));
  };

  /** Bad values for a JSON field of this schema, each of which must be refused; and values at its bounds. */
  const badValuesOf = (raw: Schema | undefined): { refused: unknown[]; maybe: unknown[]; bounds: unknown[] } => {
    const schema = resolve(raw) ?? {};
    const common: unknown[] = [null, [], {}];
    switch (schema.type) {
      case 'integer':
      case 'number': {
        const refused = [...common, '5', true, 1.5, 1e30, -1e30, Number.MAX_SAFE_INTEGER + 2];
        if (schema.maximum !== undefined) refused.push(schema.maximum + 1);
        if (schema.minimum !== undefined) refused.push(schema.minimum - 1);
        const bounds = [schema.minimum, schema.maximum].filter((value): value is number => value !== undefined);
        return { refused, maybe: [0, -1], bounds };
      }
      case 'string': {
        const refused: unknown[] = [...common, 5, true, ...offPattern(schema.pattern)];
        if (schema.enum !== undefined) refused.push('not-one-of-them');
        if (schema.maxLength !== undefined) refused.push('x'.repeat(schema.maxLength + 1));
        if (schema.minLength !== undefined && schema.minLength > 0) refused.push('');
        return { refused, maybe: ['', ' ', '\u0000', 'é'.repeat(10), '$all', 'x'.repeat(300)], bounds: schema.maxLength === undefined || schema.pattern !== undefined || schema.enum !== undefined ? [] : ['y'.repeat(schema.maxLength)] };
      }
      case 'boolean':
        return { refused: [...common, 'true', 1], maybe: [], bounds: [] };
      case 'array':
        return { refused: [null, {}, 'string', 5], maybe: [[], [null], ['x'.repeat(300)]], bounds: [] };
      default:
        return { refused: [], maybe: [null, [], 5, 'string', {}], bounds: [] };
    }
  };

  /** Bad texts for a query parameter of this schema (values arrive as text), each of which must be refused. */
  const badQueryValuesOf = (schema: Schema): { refused: string[]; bounds: string[] } => {
    const refused: string[] = [];
    const bounds: string[] = [];
    if (schema.type === 'integer') {
      refused.push('abc', '1.5', '1e3', '-1', '0x10', '', '9'.repeat(30));
      if (schema.maximum !== undefined) refused.push(String(schema.maximum + 1));
      if (schema.minimum !== undefined && schema.minimum > 0) refused.push(String(schema.minimum - 1));
      for (const bound of [schema.minimum, schema.maximum]) if (bound !== undefined) bounds.push(String(bound));
    } else if (schema.type === 'array') {
      refused.push('not-a-group', 'day,nope');
    } else {
      if (schema.enum !== undefined) refused.push('not-one-of-them');
      if (schema.format === 'date-time' || schema.format === 'date') refused.push('yesterday', '2026-13-45', '');
      if (schema.maxLength !== undefined) refused.push('x'.repeat(schema.maxLength + 1));
      refused.push(...offPattern(schema.pattern));
    }
    return { refused, bounds };
  };

  function send(item: Case): Promise<{ status: number; body: string }> {
    if (item.raw !== undefined) return rawExchange(port, item.raw);
    return new Promise((resolvePromise, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: item.method, path: item.path, headers: { ...(item.token === '' ? {} : bearer(item.token)), ...item.headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      // The event stream of a settled invocation sends its events and closes; a bounded wait anyway.
      req.setTimeout(10_000, () => req.destroy(new Error(`timed out: ${item.method} ${item.path}`)));
      if (item.body !== undefined) req.write(item.body);
      req.end();
    });
  }

  /** The cases for one route: derived from its parameters and body schema. */
  function casesOf(operation: Operation, prng: Prng): Case[] {
    const route = `${operation.method} ${operation.path}`;
    const cases: Case[] = [];
    // Bad input comes from any caller the route may serve; one not allowed gets 403 before validation.
    const caller = (): string => prng.pick([TOKENS.system, TOKENS.system, TOKENS.auditor, TOKENS.acmeAdmin, TOKENS.acmeMember]);
    const fill = (bad?: { name: string; value: string }, ids: Record<string, string> = known) =>
      operation.path.replace(/\{(\w+)\}/g, (_all, name: string) => (bad?.name === name ? bad.value : encodeURIComponent(ids[name] ?? 'x')));
    const json = { 'Content-Type': 'application/json' };
    const valid = operation.bodySchema === undefined ? undefined : (validOf(operation.bodySchema) as Record<string, unknown>);
    const base = valid === undefined ? {} : { body: JSON.stringify(valid), headers: json };
    const add = (item: Omit<Case, 'route' | 'token' | 'declared'> & { token?: string; declared?: ReadonlySet<string> }): void =>
      void cases.push({ route, token: item.token ?? caller(), declared: operation.declared, ...item });

    for (const parameter of operation.parameters.filter((parameter) => parameter.in === 'path')) {
      const derived = [...offPattern(parameter.schema.pattern).map(encodeURIComponent), ...(parameter.schema.maxLength === undefined ? [] : ['p'.repeat(parameter.schema.maxLength + 1)])];
      for (const value of [...BAD_IDS, ...derived]) {
        // An empty last id is a trailing slash: `GET /v1/gateway/models/` is the list route, not a bad model.
        if (value === '' && operation.path.endsWith(`/{${parameter.name}}`) && methodsOf.get(operation.path.slice(0, -`/{${parameter.name}}`.length))?.has(operation.method)) continue;
        if (parameter.name === 'streamName' && new RegExp(parameter.schema.pattern ?? '').test(decodeURIComponentSafe(value)) && decodeURIComponentSafe(value).length <= (parameter.schema.maxLength ?? Infinity)) continue;
        add({ description: `${route} with ${parameter.name}=${value.slice(0, 20)}`, method: operation.method, path: fill({ name: parameter.name, value }), ...base, wrongIf2xx: true, field: parameter.name });
      }
    }

    const queries = operation.parameters.filter((parameter) => parameter.in === 'query');
    for (const parameter of queries) {
      const { refused, bounds } = badQueryValuesOf(parameter.schema);
      for (const value of refused) {
        add({ description: `${route} with ?${parameter.name}=${value.slice(0, 20)}`, method: operation.method, path: `${fill()}?${parameter.name}=${encodeURIComponent(value)}`, ...base, wrongIf2xx: true, field: parameter.name });
      }
      for (const value of bounds) {
        add({ description: `${route} with ?${parameter.name}=${value} (a declared bound)`, method: operation.method, path: `${fill()}?${parameter.name}=${value}`, ...base, wrongIf2xx: false, field: parameter.name, withinBounds: true });
      }
      if (parameter.schema.type !== 'array') {
        const twice = `${parameter.name}=${encodeURIComponent(String(validOf(parameter.schema)))}`;
        add({ description: `${route} with ?${parameter.name} repeated`, method: operation.method, path: `${fill()}?${twice}&${twice}`, ...base, wrongIf2xx: false, field: parameter.name });
      }
    }
    for (const parameter of operation.parameters.filter((parameter) => parameter.in === 'header')) {
      // Only what an HTTP client can send in a header at all (Node refuses control characters).
      const values = [...badQueryValuesOf(parameter.schema).refused, ...(parameter.schema.type === 'integer' ? [] : ['   ', 'caf\u00e9'])].filter((value) => SENDABLE_HEADER.test(value) && value !== '');
      for (const value of values) {
        add({ description: `${route} with header ${parameter.name}: ${value.slice(0, 20)}`, method: operation.method, path: fill(), ...base, headers: { ...base.headers, [parameter.name]: value }, wrongIf2xx: true, field: parameter.name });
      }
    }

    // A route that declares query parameters refuses any other (one that declares none ignores them).
    if (queries.length > 0) {
      add({ description: `${route} with an unknown query parameter`, method: operation.method, path: `${fill()}?fuzzUnknown=1`, wrongIf2xx: true, field: 'fuzzUnknown' });
      add({ description: `${route} with a prototype-named query parameter`, method: operation.method, path: `${fill()}?constructor=1`, wrongIf2xx: true, field: 'constructor' });
    }

    if (valid !== undefined) {
      const path = fill();
      for (const { path: fieldPath, schema } of fieldsOf(operation.bodySchema)) {
        const field = fieldPath.join('.');
        const { refused, maybe, bounds } = badValuesOf(schema);
        const at = (value: unknown) => JSON.stringify(withValue(valid, fieldPath, value));
        for (const bad of refused) add({ description: `${route} with ${field}=${JSON.stringify(bad)?.slice(0, 30)}`, method: operation.method, path, body: at(bad), headers: json, wrongIf2xx: true, field });
        for (const odd of maybe) add({ description: `${route} with ${field}=${JSON.stringify(odd)?.slice(0, 30)} (maybe valid)`, method: operation.method, path, body: at(odd), headers: json, wrongIf2xx: false, field });
        for (const bound of bounds) add({ description: `${route} with ${field}=${String(bound).slice(0, 20)} (a declared bound)`, method: operation.method, path, body: at(bound), headers: json, wrongIf2xx: false, field, withinBounds: true });
        if (schema.type === 'object') {
          add({ description: `${route} with an unknown field in ${field}`, method: operation.method, path, body: at({ ...(validOf(schema) as object), fuzzUnknown: 1 }), headers: json, wrongIf2xx: true, field });
        }
      }
      for (const key of PROTOTYPE_KEYS) {
        add({ description: `${route} with key ${key}`, method: operation.method, path, body: `{${JSON.stringify(valid).slice(1, -1)},"${key}":{"x":1}}`, headers: json, wrongIf2xx: true, field: key });
      }
      add({ description: `${route} with an unknown field`, method: operation.method, path, body: JSON.stringify({ ...valid, fuzzUnknown: 1 }), headers: json, wrongIf2xx: true, field: 'fuzzUnknown' });
      add({ description: `${route} nested 6,000 deep`, method: operation.method, path, body: `{"x":${'['.repeat(6_000)}${']'.repeat(6_000)}}`, headers: json, wrongIf2xx: true });
      add({ description: `${route} declared br, sent plain`, method: operation.method, path, body: JSON.stringify(valid), headers: { ...json, 'Content-Encoding': 'br' }, wrongIf2xx: true });
      add({ description: `${route} declared gzip, sent garbage`, method: operation.method, path, body: Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3]), headers: { ...json, 'Content-Encoding': 'gzip' }, wrongIf2xx: true });
      add({ description: `${route} with Content-Encoding compress`, method: operation.method, path, body: JSON.stringify(valid), headers: { ...json, 'Content-Encoding': 'compress' }, wrongIf2xx: true });
      add({ description: `${route} not JSON`, method: operation.method, path, body: '{"a":', headers: json, wrongIf2xx: true });
      add({ description: `${route} as text/plain`, method: operation.method, path, body: JSON.stringify(valid), headers: { 'Content-Type': 'text/plain' }, wrongIf2xx: true });
    }

    // Every role's token, none and a bad one, with valid input: a declared answer whoever asks.
    for (const [name, token] of [...Object.entries(TOKENS), ['no', ''], ['an unknown', 'not-a-known-token']] as const) {
      const refused = token === '' || token === 'not-a-known-token';
      add({ description: `${route} as ${name} token`, method: operation.method, path: fill(), ...base, token, wrongIf2xx: refused && operation.declared.has('401') });
    }
    // Header edge cases: a single-valued header twice, a NUL byte, a value past Node's limit, an over-long token.
    const declaredHeaders = new Set(operation.parameters.filter((parameter) => parameter.in === 'header').map((parameter) => parameter.name));
    for (const header of SINGLE_VALUED) {
      const applies = header === 'Authorization' ? operation.declared.has('401') : header === 'Content-Type' ? valid !== undefined : declaredHeaders.has(header);
      if (!applies) continue;
      const token = caller();
      const twice = header === 'Authorization' ? [`Bearer ${token}`, `Bearer ${TOKENS.system}`] : header === 'Content-Type' ? ['application/json', 'application/json'] : header === 'Last-Event-ID' ? ['1', '2'] : ['fuzz-a', 'fuzz-b'];
      add({ description: `${route} with header ${header} twice`, method: operation.method, path: fill(), ...base, token, headers: { ...base.headers, [header]: twice }, wrongIf2xx: true, field: header });
    }
    const head = (extra: string): Buffer =>
      Buffer.from(`${operation.method} ${fill()} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKENS.system}\r\n${extra}\r\nConnection: close\r\n\r\n`, 'latin1');
    add({ description: `${route} with a NUL byte in a header value (raw)`, method: operation.method, path: fill(), raw: head('X-Fuzz: a\u0000b'), wrongIf2xx: true, field: 'headers' });
    add({ description: `${route} with a header name holding a space (raw)`, method: operation.method, path: fill(), raw: head('X Fuzz: a'), wrongIf2xx: true, field: 'headers' });
    add({ description: `${route} with a header of ${OVERSIZED_HEADER_CHARS} characters`, method: operation.method, path: fill(), ...base, headers: { ...base.headers, 'X-Fuzz': 'h'.repeat(OVERSIZED_HEADER_CHARS) }, wrongIf2xx: true });
    add({ description: `${route} with a token of 600 characters`, method: operation.method, path: fill(), ...base, token: 't'.repeat(600), wrongIf2xx: operation.declared.has('401') });
    add({ description: `${route} with a long odd X-Request-Id`, method: operation.method, path: fill(), ...base, headers: { ...base.headers, 'X-Request-Id': `${'r'.repeat(200)} $` }, wrongIf2xx: false });
    // A method the document does not list on this path: 404 in the error shape, whoever asks.
    for (const method of METHODS.filter((method) => !methodsOf.get(operation.path)!.has(method))) {
      add({ description: `${method} ${operation.path} (a method the document does not list there)`, method, path: fill(), token: caller(), wrongIf2xx: true, declared: new Set(['404']) });
    }

    // An organization's member and admin, on another organization's ids: never 2xx.
    if (/\{(organizationId|invocationId|webhookId)\}/.test(operation.path)) {
      for (const token of [TOKENS.acmeMember, TOKENS.acmeAdmin]) {
        add({ description: `${route} as acme's ${token === TOKENS.acmeMember ? 'member' : 'admin'} on globex's ids`, method: operation.method, path: fill(undefined, theirs), ...base, token, wrongIf2xx: true, otherTenant: true });
      }
    }

    // Another organization's member and admin, with input that is valid for acme: never 2xx.
    if (operation.path.includes('{organizationId}') || operation.path.includes('{invocationId}') || operation.path.includes('{webhookId}') || operation.path.startsWith('/v1/streams') || (valid !== undefined && valid.organizationId !== undefined)) {
      const body = valid === undefined ? {} : { body: JSON.stringify(valid.organizationId === undefined ? valid : { ...valid, organizationId: 'acme' }), headers: json };
      for (const token of [TOKENS.globexMember, TOKENS.globexAdmin]) {
        add({ description: `${route} as another organization's ${token === TOKENS.globexMember ? 'member' : 'admin'}`, method: operation.method, path: fill(), ...body, token, wrongIf2xx: true, otherTenant: true });
      }
    }
    return cases;
  }

  it(`sends every derived request (at most ${MAX_FUZZ_REQUESTS}, seeded) over every route, as every role and none, with header edge cases and undeclared methods, and gets only declared statuses, no 5xx, no wrong 2xx, no crossed tenant and no write`, async () => {
    const prng = new Prng(FUZZ_SEED, 'openapi-fuzz');
    const byRoute = new Map<string, Case[]>();
    for (const operation of operations) byRoute.set(`${operation.method} ${operation.path}`, casesOf(operation, prng.fork(`${operation.method} ${operation.path}`)));
    // A seeded sample within the bound, drawn round-robin over the routes so every route is fuzzed.
    const chosen: Case[] = [];
    while (chosen.length < MAX_FUZZ_REQUESTS && [...byRoute.values()].some((left) => left.length > 0)) {
      for (const left of byRoute.values()) {
        if (left.length > 0 && chosen.length < MAX_FUZZ_REQUESTS) chosen.push(left.splice(prng.int(0, left.length - 1), 1)[0]!);
      }
    }
    const routes = operations.map((operation) => `${operation.method} ${operation.path}`);
    expect(routes.length).toBeGreaterThan(20);
    // Every route is fuzzed; every GET route with query parameters gets them fuzzed; nested fields and tenants are in the sample.
    // The health probes, /metrics, /v1/me and the whole rate card take no parameter and no body: nothing to derive a case from.
    const parameterless = (route: string): boolean =>
      route.startsWith('GET /health') || route === 'GET /metrics' || route === 'GET /v1/me' || route === 'GET /v1/gateway/models';
    expect(routes.filter((route) => !chosen.some((item) => item.route === route) && !parameterless(route))).toEqual([]);
    expect(chosen.some((item) => item.description.includes(' with limits.maxTurns=') || item.description.includes(' with prices.'))).toBe(true);
    expect(chosen.some((item) => item.description.includes(' with input.question='))).toBe(true);
    expect(chosen.some((item) => item.description.includes('with ?limit='))).toBe(true);
    expect(chosen.some((item) => item.description.includes('with header Idempotency-Key'))).toBe(true);
    expect(chosen.filter((item) => item.otherTenant).length).toBeGreaterThan(20);
    expect(chosen.filter((item) => item.description.includes("on globex's ids")).length).toBeGreaterThan(10);
    expect(chosen.filter((item) => item.description.includes('twice')).length).toBeGreaterThan(10);
    expect(chosen.filter((item) => item.raw !== undefined).length).toBeGreaterThan(10);
    expect(chosen.filter((item) => item.description.includes('a method the document does not list')).length).toBeGreaterThan(20);
    expect(new Set(chosen.filter((item) => item.description.includes(' token')).map((item) => item.token)).size).toBe(Object.keys(TOKENS).length + 3);

    const undeclared: Sent[] = [];
    const serverErrors: Sent[] = [];
    const wrong2xx: Sent[] = [];
    const badShapes: Sent[] = [];
    const unnamed: Sent[] = [];
    const boundsDisagree: Sent[] = [];
    const crossed: Sent[] = [];
    const writes: Sent[] = [];
    for (const item of chosen) {
      const before = await store.headPosition();
      const answer = await send(item);
      const sent = { description: item.description, status: answer.status, body: answer.body.slice(0, 300) };
      if (!item.declared.has(String(answer.status))) undeclared.push(sent);
      if (answer.status >= 500) serverErrors.push(sent);
      if (answer.status < 300 && item.wrongIf2xx) wrong2xx.push(sent);
      if (item.otherTenant && answer.status !== 403 && answer.status !== 404) crossed.push(sent);
      if (answer.status < 400) continue;
      const body = parsed(answer.body);
      const fields = (body?.fields ?? {}) as Record<string, string[]>;
      const shaped =
        body !== undefined &&
        body.statusCode === answer.status &&
        typeof body.code === 'string' &&
        typeof body.message === 'string' &&
        typeof body.requestId === 'string' &&
        (answer.status !== 400 || Object.keys(fields).length > 0);
      if (!shaped) badShapes.push(sent);
      if (item.otherTenant && body !== undefined && Object.keys(body).some((key) => !ERROR_SHAPE_KEYS.has(key))) crossed.push(sent);
      if (answer.status === 400 && item.field !== undefined && !item.withinBounds && !Object.keys(fields).some((key) => related(key, item.field!))) {
        // A "maybe valid" value refused for another field's sake is still a 400 about the request's own input.
        if (item.wrongIf2xx) unnamed.push(sent);
      }
      if (answer.status === 400 && item.withinBounds && (fields[item.field!] ?? []).some((problem) => BOUND_PROBLEM.test(problem))) boundsDisagree.push(sent);
      const written = await requestWrites(store, before);
      if (written.length > 0) writes.push({ ...sent, body: written.join(', ') });
    }
    expect(undeclared).toEqual([]);
    expect(serverErrors).toEqual([]);
    expect(wrong2xx).toEqual([]);
    expect(badShapes).toEqual([]);
    expect(unnamed).toEqual([]);
    expect(boundsDisagree).toEqual([]);
    expect(crossed).toEqual([]);
    expect(writes).toEqual([]);
  }, 120_000);
});

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The schema an example value implies, for the open objects documented by example. */
function exampleSchema(value: unknown): Schema {
  if (typeof value === 'string') return { type: 'string', example: value };
  if (typeof value === 'number') return { type: Number.isInteger(value) ? 'integer' : 'number', example: value };
  if (typeof value === 'boolean') return { type: 'boolean', example: value };
  return { type: 'object', example: value };
}

/** `base` with the value at `path` replaced (a copy). */
function withValue(base: Record<string, unknown>, path: readonly string[], value: unknown): Record<string, unknown> {
  const [head, ...rest] = path;
  if (head === undefined) return base;
  const inner = base[head];
  return { ...base, [head]: rest.length === 0 ? value : withValue(isObject(inner) ? inner : {}, rest, value) };
}

/** A refusal's field names the field asked about, a field within it, or one it is within. */
function related(key: string, field: string): boolean {
  return key === field || key.startsWith(`${field}.`) || key.startsWith(`${field}[`) || field.startsWith(`${key}.`);
}

function parsed(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}


/**
 * What was written to the log after `before` by anything but the instance's own housekeeping: its
 * lease renewals (`lease-*`, every third of LEDGER_LEASE_DURATION_MS, on a timer of their own) land
 * whenever their timer fires, during whichever request is being answered then.
 */
async function requestWrites(store: EventStore, before: bigint | undefined): Promise<string[]> {
  const written = await store.readAll(before === undefined ? {} : { after: before });
  return written.filter((event) => !event.streamName.startsWith('lease-')).map((event) => `${event.type} on ${event.streamName}`);
}
