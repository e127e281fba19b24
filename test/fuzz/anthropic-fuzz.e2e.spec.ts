/**
 * Fuzzes the gateway's `/anthropic` routes (issue 31, "Edges"), as test/fuzz/openapi-fuzz.e2e.spec.ts
 * fuzzes the API: messages, count_tokens, the models list and a model, and paths and methods the
 * gateway does not serve, through the real service against a local fake upstream. Each request draws
 * a key of some shape (the service's own, revoked, unknown, forged with any organization part, any
 * bytes, any length, sent twice or not at all), a body (valid, with a member named twice however
 * spelt and at any depth, fields of the wrong type, numbers past any bound, nesting past the bound,
 * invalid UTF-8, server tools of every kind, not JSON at all) and headers (content types, two of
 * them, encodings, odd versions). The upstream answers each call it gets with a scripted answer
 * (JSON, a stream, or an error of its own, each carrying UPSTREAM_MARK).
 *
 * Seeded (FUZZ_SEED) and bounded by a count (MAX_GATEWAY_FUZZ_REQUESTS), not a clock. For every
 * request: no 5xx of the gateway's own (a 5xx is allowed only when the upstream was called and the
 * answer is its own, relayed); no stack trace in any body; every refusal of the gateway's own in
 * Anthropic's error shape; no 2xx for a key that is not a live key of the service; no Messages body
 * that names a member twice reaches the upstream. At the end, nothing is held and no slot is taken.
 */
import type { AddressInfo } from 'node:net';
import { Prng } from '../../src/simulation/prng';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { rawExchange } from '../http/support/raw-http';
import { errorReply, messageReply, messageStream, type ScriptedReply } from '../support/messages-api-server';
import { GATEWAY_MODEL, startGatewayService, type GatewayService } from '../gateway/support/gateway-service';

const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 31);
/** Requests sent in all, across the routes. */
const MAX_GATEWAY_FUZZ_REQUESTS = 600;
/** In every answer the fake upstream gives: a relayed answer carries it, the gateway's own never does. */
const UPSTREAM_MARK = 'fuzz-upstream-answer';
/** How often the final check asks the balance again, in ms: a poll for a condition, never a wait for correctness. */
const POLL_MS = 10;
const STACK_TRACE = /\bat [\w$.<>[\] ]+ \(?[^()\s]*:\d+:\d+\)?|node:internal|Error: .*\n\s+at /;

interface Drawn {
  readonly description: string;
  readonly method: string;
  readonly path: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Buffer;
  /** The key is a live key of the service, sent once: only then may the answer be a 2xx. */
  readonly liveKey: boolean;
  /** A Messages body that names a member twice: it must never reach the upstream (finding 3). */
  readonly duplicate: boolean;
}

const forged = (organization: Buffer | string, secret = 'A'.repeat(43)): string =>
  `llk_${Buffer.from(organization).toString('base64url')}.${secret}`;

/** The key headers of a draw, and whether they carry one live key. */
function keyHeaders(prng: Prng, live: string, revoked: string): { headers: [string, string][]; live: boolean; description: string } {
  const shapes: [string, () => [string, string][], boolean][] = [
    ['the live key', () => [['x-api-key', live]], true],
    ['the live key as a bearer token', () => [['Authorization', `Bearer ${live}`]], true],
    ['a revoked key', () => [['x-api-key', revoked]], false],
    ['an unknown key of acme', () => [['x-api-key', forged('acme')]], false],
    ['an unknown organization', () => [['x-api-key', forged(`org-${prng.int(0, 999)}`)]], false],
    ['an over-long organization part', () => [['x-api-key', forged('x'.repeat(prng.int(129, 370)))]], false],
    ['an organization of random bytes', () => [['x-api-key', forged(Buffer.from(Array.from({ length: prng.int(1, 60) }, () => prng.int(0, 255))))]], false],
    ['an organization of control bytes', () => [['x-api-key', forged('\u0000acme\u0007')]], false],
    ['a key past the length bound', () => [['x-api-key', `llk_${'a'.repeat(prng.int(513, 4_000))}`]], false],
    ['a key with Latin-1 bytes', () => [['x-api-key', `llk_\u00e9\u00ff.${'A'.repeat(43)}`]], false],
    ['an empty key', () => [['x-api-key', '']], false],
    ['a key with a space', () => [['x-api-key', `${live.slice(0, 10)} ${live.slice(10)}`]], false],
    ['the live key twice', () => [['x-api-key', live], ['x-api-key', live]], false],
    ['the live key and another bearer', () => [['x-api-key', live], ['Authorization', `Bearer ${forged('acme')}`]], true],
    ['two bearer headers', () => [['Authorization', `Bearer ${live}`], ['Authorization', `Bearer ${live}`]], false],
    ['a Basic authorization', () => [['Authorization', 'Basic dXNlcjpwYXNz']], false],
    ['no key', () => [], false],
  ];
  // Half the draws carry the live key, so the rest of the request is fuzzed past the key check.
  const [description, make, isLive] = prng.chance(50) ? shapes[prng.int(0, 1)]! : prng.pick(shapes);
  return { headers: make(), live: isLive, description };
}

/** A Messages body, often wrong in some way. */
function messagesBody(prng: Prng): { text: Buffer; description: string; duplicate: boolean } {
  const value = <T>(items: readonly T[]): T => prng.pick(items);
  // Each field is valid in most draws, so a draw is often wrong in one way only.
  const model = prng.chance(70) ? GATEWAY_MODEL : value(['claude-x', '', 7, null, 'm'.repeat(300), ['a']]);
  const maxTokens = prng.chance(70) ? value([1, 16, 64]) : value([64_000, 64_001, 2 ** 53 + 1, -1, 0, 1.5, '16', null, 1e308, 9e15]);
  const stream = value([true, false, false, 'yes', null, 1]);
  const tool = (): unknown =>
    value([
      { type: 'web_search_20250305', name: 'web_search', max_uses: value([1, 5, 1e9, -1, '3', undefined]) },
      { type: 'web_fetch_20250910', name: 'web_fetch', max_uses: value([1, 50, 1e9]), max_content_tokens: value([1, 100_000, 1e12, undefined]) },
      { type: 'code_execution_20250825', name: 'code_execution' },
      { type: 'bash_20250124', name: 'bash' },
      { name: 'get_weather', description: 'w', input_schema: { type: 'object', properties: {} } },
      'not a tool',
    ]);
  const body: Record<string, unknown> = { model, max_tokens: maxTokens, messages: [{ role: 'user', content: value(['Hi', [{ type: 'text', text: 'Hi' }], [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }], 7]) }] };
  if (prng.chance(50)) body.stream = stream;
  if (prng.chance(30)) body.tools = prng.chance(90) ? Array.from({ length: prng.int(1, 3) }, tool) : { not: 'a list' };
  if (prng.chance(10)) body.mcp_servers = [{ type: 'url', url: 'https://example.invalid/mcp', name: 'x' }];
  if (prng.chance(10)) body.system = value(['policy', [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'd' } }], 5]);
  const text = JSON.stringify(body);
  const mutations: [string, () => string | Buffer][] = [
    ['as it is', () => text],
    ['max_tokens named twice', () => text.replace('{', `{"max_tokens":${prng.int(1, 70_000)},`)],
    ['max_tokens named twice, escaped', () => text.replace('{', '{"max_tok\\u0065ns":1,')],
    ['model named twice', () => text.replace('{', '{"model":"claude-opus-dear",')],
    ['a member named twice in a message', () => text.replace('{"role":"user"', '{"role":"user","role":"assistant"')],
    ['stream named twice', () => text.replace('{', '{"stream":true,"stream":false,')],
    ['a unicode member named twice', () => text.replace('{', '{"\u00e9":1,"\\u00e9":2,')],
    [
      'nested past the bound',
      () => {
        const depth = prng.int(1_001, 5_000);
        return text.replace('"messages":', `"metadata":${'['.repeat(depth)}${']'.repeat(depth)},"messages":`);
      },
    ],
    ['deeply nested within the bound', () => text.replace('"messages":', `"x":${'['.repeat(900)}1${']'.repeat(900)},"messages":`)],
    ['cut short', () => text.slice(0, prng.int(0, text.length - 1))],
    ['with a trailing comma', () => text.replace(/}$/, ',}')],
    ['with a comment', () => `/* c */${text}`],
    ['with a byte-order mark', () => `\ufeff${text}`],
    ['invalid UTF-8 in a string', () => Buffer.concat([Buffer.from(text.replace('"Hi"', '"H')), Buffer.from([0xff, 0xfe, 0x22]), Buffer.from(text.slice(text.indexOf('"Hi"') + 4))])],
    ['a lone surrogate escape', () => text.replace('"Hi"', '"\\ud800"')],
    ['a JSON array', () => `[${text}]`],
    ['a bare string', () => '"hello"'],
    ['empty', () => ''],
    ['a 300 KB prompt', () => text.replace('"Hi"', JSON.stringify('x'.repeat(300_000)))],
    ['a number past every bound', () => text.replace(/"max_tokens":[^,}]*/, '"max_tokens":1e400')],
  ];
  const [mutation, make] = prng.chance(40) ? mutations[0]! : prng.pick(mutations);
  const made = make();
  return {
    text: Buffer.isBuffer(made) ? made : Buffer.from(made, 'utf8'),
    description: `model ${JSON.stringify(model)}, max_tokens ${String(maxTokens)}, ${mutation}`,
    duplicate: mutation.includes('named twice'),
  };
}

function contentHeaders(prng: Prng): { headers: [string, string][]; description: string } {
  const headers: [string, string][] = [];
  const type = prng.chance(80) ? 'application/json' : prng.pick(['application/json; charset=utf-8', 'application/json; charset=latin1', 'text/plain', 'none', 'twice']);
  if (type === 'twice') headers.push(['Content-Type', 'application/json'], ['content-type', 'application/json']);
  else if (type !== 'none') headers.push(['Content-Type', type]);
  const encoding = prng.chance(90) ? 'none' : prng.pick(['gzip', 'identity', 'br']);
  if (encoding !== 'none') headers.push(['Content-Encoding', encoding]);
  const version = prng.chance(85) ? '2023-06-01' : prng.pick(['none', 'x'.repeat(300), 'twice']);
  if (version === 'twice') headers.push(['anthropic-version', '2023-06-01'], ['anthropic-version', '2024-01-01']);
  else if (version !== 'none') headers.push(['anthropic-version', version]);
  if (prng.chance(15)) headers.push(['anthropic-beta', prng.pick(['tools-2024-04-04', '', 'a,b,,c', '\u00e9'])]);
  if (prng.chance(5)) headers.push(['Idempotency-Key', 'a'], ['Idempotency-Key', 'b']);
  return { headers, description: `content-type ${type}, encoding ${encoding}, version ${version.slice(0, 12)}` };
}

function draw(prng: Prng, live: string, revoked: string): Drawn {
  const key = keyHeaders(prng, live, revoked);
  const route = prng.weighted({ messages: 6, count_tokens: 2, models: 1, model: 1, elsewhere: 1 });
  const { headers, description } = contentHeaders(prng);
  if (route === 'models' || route === 'model' || route === 'elsewhere') {
    const path =
      route === 'models'
        ? prng.pick(['/anthropic/v1/models', '/anthropic/v1/models?limit=0', '/anthropic/v1/models?limit=1001', '/anthropic/v1/models?limit=x&after_id=%00', '/anthropic/v1/models?before_id=zz'])
        : route === 'model'
          ? `/anthropic/v1/models/${prng.pick([GATEWAY_MODEL, 'claude-x', '%00', 'a'.repeat(300), '..%2F..%2Fetc', '%E0%A4%A', '%F0%9F%92%A5'])}`
          : prng.pick(['/anthropic/v1/complete', '/anthropic/v2/x', '/anthropic', '/anthropic/v1/messages/batches', '/anthropic/v1/messages/%00']);
    const method = route === 'elsewhere' ? prng.pick(['GET', 'POST', 'DELETE', 'PUT']) : 'GET';
    return { description: `${key.description}; ${method} ${path}; ${description}`, method, path, headers: [...key.headers, ...headers], body: Buffer.alloc(0), liveKey: key.live, duplicate: false };
  }
  const body = messagesBody(prng);
  const path = route === 'messages' ? prng.pick(['/anthropic/v1/messages', '/anthropic/v1/messages?beta=true']) : '/anthropic/v1/messages/count_tokens';
  const method = prng.chance(95) ? 'POST' : prng.pick(['GET', 'PUT', 'PATCH']);
  return {
    description: `${key.description}; ${method} ${path}; ${body.description}; ${description}`,
    method,
    path,
    headers: [...key.headers, ...headers],
    body: body.text,
    liveKey: key.live,
    duplicate: body.duplicate && route === 'messages',
  };
}

/** What the fake upstream answers the next call with: each carries UPSTREAM_MARK. */
function upstreamAnswer(prng: Prng): ScriptedReply {
  switch (prng.weighted({ json: 4, stream: 3, overloaded: 1, error: 1, invalid: 1 })) {
    case 'json':
      return messageReply({ id: `msg_${UPSTREAM_MARK}`, usage: { input_tokens: prng.int(1, 500), output_tokens: prng.int(1, 16) } });
    case 'stream':
      return { kind: 'sse', steps: messageStream({ texts: [UPSTREAM_MARK, 'done'], deltaUsage: { output_tokens: prng.int(1, 16) } }) };
    case 'overloaded':
      return errorReply(529, 'overloaded_error', `Overloaded (${UPSTREAM_MARK})`);
    case 'error':
      return errorReply(500, 'api_error', `Internal error (${UPSTREAM_MARK})`);
    default:
      return errorReply(400, 'invalid_request_error', `messages: bad (${UPSTREAM_MARK})`);
  }
}

describe('fuzzing the gateway’s /anthropic routes (issue 31, edges): no 5xx of its own, no stack trace, every refusal in Anthropic’s shape, nothing left held', () => {
  let service: GatewayService;
  let port: number;
  let revoked: string;

  beforeAll(async () => {
    service = await startGatewayService({ env: { LEDGER_MAX_RUNNING: '1000' } });
    port = (service.ledger.app.getHttpServer().address() as AddressInfo).port;
    const system = bearer(TOKENS.system);
    const other = await service.ledger.http().post('/v1/organizations/acme/gateway-keys').set(system).send({ name: 'revoked' }).expect(200);
    await service.ledger.http().delete(`/v1/organizations/acme/gateway-keys/${other.body.keyId as string}`).set(system).expect(200);
    revoked = other.body.key as string;
  });
  afterAll(() => service.close());

  it(`sends ${MAX_GATEWAY_FUZZ_REQUESTS} seeded requests (FUZZ_SEED=${FUZZ_SEED}) and finds none wrong`, async () => {
    const prng = new Prng(FUZZ_SEED, 'anthropic-fuzz');
    const wrong: string[] = [];
    let upstreamCalls = 0;
    for (let index = 0; index < MAX_GATEWAY_FUZZ_REQUESTS; index++) {
      const drawn = draw(prng, service.key, revoked);
      service.upstream.reply(upstreamAnswer(prng));
      const before = service.upstream.requests.length;
      const head = [`${drawn.method} ${drawn.path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...drawn.headers.map(([name, value]) => `${name}: ${value}`)];
      if (drawn.method !== 'GET' || drawn.body.length > 0) head.push(`Content-Length: ${drawn.body.length}`);
      const answer = await rawExchange(port, Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), drawn.body]));
      const called = service.upstream.requests.length > before;
      if (called) upstreamCalls++;
      const relayed = called && answer.body.includes(UPSTREAM_MARK);
      const problems: string[] = [];
      if (answer.status >= 500 && !relayed) problems.push(`a ${answer.status} of the gateway's own`);
      if (STACK_TRACE.test(answer.body)) problems.push('a stack trace in the body');
      if (answer.status >= 200 && answer.status < 300 && !drawn.liveKey) problems.push('a 2xx for a key that is not one live key');
      if (answer.status >= 400 && !relayed && !anthropicShaped(answer.body)) problems.push('a refusal not in Anthropic’s error shape');
      if (called && drawn.duplicate) problems.push('a body naming a member twice went upstream');
      if (problems.length > 0) wrong.push(`#${index} ${drawn.description}: ${problems.join(', ')} → ${answer.status} ${answer.body.slice(0, 300)}`);
    }
    expect(wrong).toEqual([]);
    // The draws reach the upstream, or the fuzz tests only the refusals.
    expect(upstreamCalls).toBeGreaterThan(MAX_GATEWAY_FUZZ_REQUESTS / 10);
    let balance = await service.ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system)).expect(200);
    while (balance.body.held !== 0 || balance.body.running !== 0) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      balance = await service.ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system)).expect(200);
    }
    expect(balance.body).toMatchObject({ held: 0, running: 0 });
  });
});

function anthropicShaped(text: string): boolean {
  try {
    const body = JSON.parse(text) as { type?: unknown; error?: { type?: unknown; message?: unknown }; request_id?: unknown };
    return body.type === 'error' && typeof body.error?.type === 'string' && typeof body.error.message === 'string' && typeof body.request_id === 'string';
  } catch {
    return false;
  }
}
