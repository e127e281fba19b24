/**
 * Server tools through the real service (docs/gateway.md, "How the hold is bounded"): every tool type
 * the gateway admits is held for what its uses can make the model read, and a tool it cannot bound
 * (code execution or MCP servers without a rate-card allowance, an unknown server tool) is refused
 * with a 400 naming the field, before anything is held, recorded or sent upstream.
 */
import { messageReply } from '../support/messages-api-server';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { GATEWAY_MODEL as MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

/** One credit per token of every kind: a price in credits reads as a count of tokens. */
const ONE_CREDIT_PER_TOKEN = { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000, cacheWritePerMTok: 1_000_000, cacheWrite1hPerMTok: 1_000_000, cacheReadPerMTok: 1_000_000 };
/** Enough for the holds below (the largest, 50 fetches of the default allowance, is about 2.6 × 10⁸). */
const GRANTED = 1_000_000_000_000;
const MESSAGES = [{ role: 'user' as const, content: 'Read https://example.org/a and tell me what it says.' }];

interface Answer {
  readonly status: number;
  readonly body: { type?: string; error?: { type?: string; message?: string }; request_id?: string };
  readonly invocationId: string | null;
}

describe('server tools: each admitted tool is held for what its uses can read; one the gateway cannot bound is refused (docs/gateway.md)', () => {
  let service: GatewayService;
  const balance = async () => (await service.ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system)).expect(200)).body as Record<string, number>;
  const invocations = async () => ((await service.ledger.http().get('/v1/organizations/acme/invocations').set(bearer(TOKENS.system)).expect(200)).body as { invocations: unknown[] }).invocations;

  /** One Messages request with `extra` merged into a small body, answered as the gateway answers it. */
  const call = async (extra: Record<string, unknown>): Promise<Answer> => {
    const response = await fetch(`${service.client().baseURL}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': service.key },
      body: JSON.stringify({ model: MODEL, max_tokens: 10, messages: MESSAGES, ...extra }),
    });
    return { status: response.status, body: (await response.json()) as Answer['body'], invocationId: response.headers.get('llm-ledger-invocation-id') };
  };

  beforeAll(async () => {
    service = await startGatewayService({ prices: ONE_CREDIT_PER_TOKEN, credits: GRANTED });
  });
  afterAll(() => service.close());

  it('finding 4: a web_fetch tool with max_uses 50 is held for what 50 fetches can read, and charged the 150,010 credits its usage prices at', async () => {
    service.upstream.reply(messageReply({ model: MODEL, usage: { input_tokens: 150_000, output_tokens: 10 } }));
    const answer = await call({ tools: [{ type: 'web_fetch_20250910', name: 'web_fetch', max_uses: 50 }] });
    expect(answer.status).toBe(200);
    const view = await settledView(service.ledger, answer.invocationId!);
    // A plain request's hold was about 4,200: the 150,010-credit price was cut to it and the rest lost.
    expect(view.estimate as number).toBeGreaterThanOrEqual(50 * 100_000);
    expect(view).toMatchObject({ state: 'settled', outcome: 'completed', charge: 150_010 });
    expect(await balance()).toMatchObject({ held: 0, running: 0 });
  });

  it('holds a web_fetch tool for max_uses × max_content_tokens, each fetch read again on every later step', async () => {
    service.upstream.reply(messageReply({ model: MODEL, usage: { input_tokens: 1_000, output_tokens: 10 } }));
    const plain = await call({});
    service.upstream.reply(messageReply({ model: MODEL, usage: { input_tokens: 1_000, output_tokens: 10 } }));
    const fetching = await call({ tools: [{ type: 'web_fetch_20250910', name: 'web_fetch', max_uses: 2, max_content_tokens: 3_000 }] });
    const [plainView, fetchingView] = [await settledView(service.ledger, plain.invocationId!), await settledView(service.ledger, fetching.invocationId!)];
    // Two fetches of 3,000 tokens, read on three steps: at least 3 × 6,000 more than the plain call.
    expect((fetchingView.estimate as number) - (plainView.estimate as number)).toBeGreaterThanOrEqual(3 * 6_000);
    expect(fetchingView).toMatchObject({ state: 'settled', charge: 1_010 });
  });

  describe('a server tool the gateway cannot bound is refused with a 400 naming the field, nothing held, recorded or sent upstream', () => {
    let before: { requests: number; invocations: number; balance: Record<string, number> };
    beforeEach(async () => {
      before = { requests: service.upstream.requests.length, invocations: (await invocations()).length, balance: await balance() };
    });
    afterEach(async () => {
      expect(service.upstream.requests).toHaveLength(before.requests);
      expect(await invocations()).toHaveLength(before.invocations);
      expect(await balance()).toEqual(before.balance);
    });

    it.each<[string, Record<string, unknown>, RegExp]>([
      ['a code execution tool the rate card gives no allowance', { tools: [{ name: 'lookup', input_schema: { type: 'object' } }, { type: 'code_execution_20250825', name: 'code_execution' }] }, /^tools\[1\]\.type: code_execution_20250825 .*serverToolAllowances\.codeExecution/],
      ['MCP servers the rate card gives no allowance', { mcp_servers: [{ type: 'url', url: 'https://mcp.example.org/sse', name: 'example' }] }, /^mcp_servers: .*serverToolAllowances\.mcpServers/],
      ['an unknown server tool', { tools: [{ type: 'custom', name: 'mine', input_schema: { type: 'object' } }, { type: 'tool_search_tool_regex_20251119', name: 'tool_search' }] }, /^tools\[1\]\.type: tool_search_tool_regex_20251119 /],
    ])('refuses %s (finding 4: never held as a plain request)', async (_case, extra, message) => {
      const answer = await call(extra);
      expect({ status: answer.status, type: answer.body.type, errorType: answer.body.error?.type }).toEqual({ status: 400, type: 'error', errorType: 'invalid_request_error' });
      expect(answer.body.error?.message).toMatch(message);
      expect(answer.invocationId).toBeNull();
    });
  });

  it('admits code execution and MCP servers once the rate card gives them an allowance, and holds for it', async () => {
    const allowance = { maxUses: 3, resultTokensPerUse: 20_000, definitionTokens: 5_000 };
    await service.ledger
      .http()
      .put(`/v1/gateway/models/${MODEL}`)
      .set(bearer(TOKENS.system))
      .send({ prices: ONE_CREDIT_PER_TOKEN, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true, serverToolAllowances: { codeExecution: allowance, mcpServers: allowance } })
      .expect(200, { model: MODEL, version: 2 });
    service.upstream.reply(messageReply({ model: MODEL, usage: { input_tokens: 60_000, output_tokens: 10 } }));
    const answer = await call({ tools: [{ type: 'code_execution_20250825', name: 'code_execution' }], mcp_servers: [{ type: 'url', url: 'https://mcp.example.org/sse', name: 'example' }] });
    expect(answer.status).toBe(200);
    const view = await settledView(service.ledger, answer.invocationId!);
    // Six uses of 20,000 result tokens each, read again on each of the seven steps.
    expect(view.estimate as number).toBeGreaterThanOrEqual(7 * 6 * 20_000);
    expect(view).toMatchObject({ charge: 60_010 });
  });

  it('refuses a rate card allowance out of its bounds, naming the field', async () => {
    const put = (serverToolAllowances: unknown) =>
      service.ledger.http().put(`/v1/gateway/models/${MODEL}`).set(bearer(TOKENS.system)).send({ prices: ONE_CREDIT_PER_TOKEN, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true, serverToolAllowances });
    expect((await put({ codeExecution: { maxUses: 0, resultTokensPerUse: 1, definitionTokens: 0 } }).expect(400)).body.fields).toHaveProperty(['serverToolAllowances.codeExecution.maxUses']);
    expect((await put({ mcpServers: { maxUses: 1, resultTokensPerUse: 1 } }).expect(400)).body.fields).toHaveProperty(['serverToolAllowances.mcpServers.definitionTokens']);
    expect((await put({ bash: { maxUses: 1, resultTokensPerUse: 1, definitionTokens: 0 } }).expect(400)).body.fields).toHaveProperty(['serverToolAllowances.bash']);
  });

  it('passes a client tool Anthropic defines (bash, text editor, computer, memory) upstream, held for its definition', async () => {
    service.upstream.reply(messageReply({ model: MODEL, usage: { input_tokens: 2_000, output_tokens: 10 } }));
    const answer = await call({ tools: [{ type: 'bash_20250124', name: 'bash' }, { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' }] });
    expect(answer.status).toBe(200);
    expect(await settledView(service.ledger, answer.invocationId!)).toMatchObject({ charge: 2_010 });
  });
});
