/**
 * `llm-ledger reconcile anthropic` against a local HTTP server that answers in the Admin API's
 * documented usage-report shape (no network), over a log the real application wrote while it talked
 * to the local Messages API server through the real SDK.
 */
import { GrantCreditsCommand } from '../../src/accounts/account-commands';
import { PublishOperationCommand } from '../../src/catalog/publish-operation.command';
import { runCli } from '../../src/cli/run-cli';
import { EXIT_DIFFERENCES, EXIT_OK, EXIT_USAGE } from '../../src/cli/cli-io';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { USAGE_REPORT_PATH } from '../../src/providers/anthropic/anthropic-usage-report';
import { scriptedToolUse } from '../../src/runtime';
import { MemoryIo } from '../cli/support/memory-io';
import { MessagesApiServer, messageReply, toolUseBlock, type ApiUsage, type RecordedRequest, type ScriptedReply } from '../support/messages-api-server';
import { publication, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { PostgresTestServer } from '../support/postgres-server';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ADMIN_KEY = 'sk-ant-admin-test-key';
const MODEL = 'claude-sonnet-4-5-20250929';
const DAY_MS = 86_400_000;

/** What the Messages API server answers each invocation with; the report is built from the same figures. */
const CALLS: readonly ApiUsage[] = [
  { input_tokens: 1_200, output_tokens: 80, cache_creation_input_tokens: 3_000, cache_creation: { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 2_000 }, cache_read_input_tokens: 0, server_tool_use: { web_search_requests: 2 } },
  { input_tokens: 900, output_tokens: 40, cache_creation_input_tokens: 0, cache_read_input_tokens: 3_000 },
  { input_tokens: 2_500, output_tokens: 120, cache_creation_input_tokens: 0, cache_read_input_tokens: 3_000, server_tool_use: { web_search_requests: 1 } },
];

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The log the application writes and the CLI reads: its SQLite file, or a PostgreSQL server the test starts. */
type LogUnderTest = { readonly env: Record<string, string>; close(): Promise<void> } | undefined;

describe.each<[string, () => Promise<LogUnderTest>]>([
  ['the embedded SQLite log', async () => undefined],
  [
    'a PostgreSQL log',
    async () => {
      const server = await PostgresTestServer.start();
      const url = await server.createDatabase('reconcile');
      const own = mkdtempSync(join(tmpdir(), 'llm-ledger-reconcile-pg-'));
      const env = { LEDGER_STORE: url, LEDGER_READ_STORE: join(own, 'read-models.sqlite'), LEDGER_ANSWER_STORE: join(own, 'answers.sqlite') };
      return {
        env,
        close: async () => {
          await server.stop();
          rmSync(own, { recursive: true, force: true });
        },
      };
    },
  ],
])('llm-ledger reconcile anthropic: the ledger’s attempts against Anthropic’s usage report, by model, bucket and kind, on %s', (_name, openLog) => {
  let log: LogUnderTest;
  let messages: MessagesApiServer;
  let admin: MessagesApiServer;
  let storeUrl: string;
  let directory: string;
  let today: string;
  let yesterday: string;

  beforeAll(async () => {
    messages = await MessagesApiServer.start();
    messages.reply(...CALLS.map((apiUsage) => messageReply({ stopReason: 'tool_use', model: MODEL, content: [toolUseBlock('toolu_a', 'submit_answer', { value: 42 })], usage: apiUsage })));
    const answering = scriptedFeature('reconcile.answer', () => [scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(99_999, 1) })]);
    const local = scriptedFeature('reconcile.local', () => [scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(55_555, 5) })]);
    log = await openLog();
    const ledger = await startLedgerApp({ keepDirectory: true, env: { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: messages.baseURL, ...log?.env }, features: [answering, local] });
    await ledger.commandBus.execute(new PublishOperationCommand('reconcile.answer', publication({ routing: { provider: 'anthropic', model: 'claude-test-sonnet' } })));
    // A scripted route: its attempts are no one's invoice at Anthropic and stay out of the comparison.
    await ledger.commandBus.execute(new PublishOperationCommand('reconcile.local', publication()));
    await ledger.commandBus.execute(new GrantCreditsCommand('acme', 10_000_000, 'prepaid', 'grant-acme'));
    const startedMs = Date.now();
    for (let i = 0; i < CALLS.length; i += 1) {
      await ledger.commandBus.execute(new RunOperationCommand({ operationId: 'reconcile.answer', organizationId: 'acme', input: { question: 'q' } }));
    }
    await ledger.commandBus.execute(new RunOperationCommand({ operationId: 'reconcile.local', organizationId: 'acme', input: { question: 'q' } }));
    // A run that straddles midnight would split the buckets; the test names the day its attempts began.
    today = day(startedMs);
    yesterday = day(startedMs - DAY_MS);
    directory = ledger.directory;
    storeUrl = log?.env.LEDGER_STORE ?? `sqlite:${ledger.logPath}`;
    await ledger.close();
    admin = await MessagesApiServer.start();
  }, 60_000);

  afterAll(async () => {
    await messages.close();
    await admin.close();
    rmSync(directory, { recursive: true, force: true });
    await log?.close();
  });

  /** Anthropic's report: yesterday's bucket (empty) on the first page, today's on the second. */
  function report(adjust: (row: Record<string, unknown>) => Record<string, unknown> = (row) => row): (request: RecordedRequest) => ScriptedReply {
    const sum = (pick: (u: ApiUsage) => number | undefined | null) => CALLS.reduce((total, u) => total + (pick(u) ?? 0), 0);
    const row = adjust({
      model: MODEL,
      api_key_id: 'apikey_01',
      workspace_id: null,
      service_tier: 'standard',
      context_window: '0-200k',
      uncached_input_tokens: sum((u) => u.input_tokens),
      cache_creation: { ephemeral_5m_input_tokens: sum((u) => u.cache_creation?.ephemeral_5m_input_tokens), ephemeral_1h_input_tokens: sum((u) => u.cache_creation?.ephemeral_1h_input_tokens) },
      cache_read_input_tokens: sum((u) => u.cache_read_input_tokens),
      output_tokens: sum((u) => u.output_tokens),
      server_tool_use: { web_search_requests: sum((u) => u.server_tool_use?.web_search_requests) },
    });
    return (request) => {
      const url = new URL(request.path, admin.baseURL);
      if (url.pathname !== USAGE_REPORT_PATH) return { kind: 'json', status: 404, body: { type: 'error', error: { type: 'not_found_error', message: url.pathname } } };
      if (url.searchParams.get('page') === null) {
        return { kind: 'json', status: 200, body: { data: [{ starting_at: `${yesterday}T00:00:00Z`, ending_at: `${today}T00:00:00Z`, results: [] }], has_more: true, next_page: 'page_MjAyNi0xMi0wMg==' } };
      }
      return { kind: 'json', status: 200, body: { data: [{ starting_at: `${today}T00:00:00Z`, ending_at: `${day(Date.parse(today) + DAY_MS)}T00:00:00Z`, results: [row] }], has_more: false, next_page: null } };
    };
  }

  const reconcile = async (extra: readonly string[] = [], env: Record<string, string> = { ANTHROPIC_ADMIN_API_KEY: ADMIN_KEY }) => {
    const io = new MemoryIo();
    const exitCode = await runCli(['reconcile', 'anthropic', '--from', yesterday, '--to', today, '--store', storeUrl, ...extra], { io, env: { ANTHROPIC_BASE_URL: admin.baseURL, ...env } });
    return { exitCode, io };
  };

  it('agrees exactly when Anthropic counted what the ledger recorded, reading every page of the report', async () => {
    const before = admin.requests.length;
    admin.reply(report(), report());
    const { exitCode, io } = await reconcile();
    expect(io.stderrText).toBe('');
    expect(io.lines).toEqual([expect.stringMatching(/^reconcile anthropic: OK — the ledger and Anthropic agree \(.*1d buckets, exact; 3 ledger attempts, 0 batch results, 1 report row\)\.$/)]);
    expect(exitCode).toBe(EXIT_OK);

    const [first, second] = admin.requests.slice(before);
    const query = new URL(first!.path, admin.baseURL).searchParams;
    expect(query.get('starting_at')).toBe(`${yesterday}T00:00:00.000Z`);
    expect(query.get('ending_at')).toBe(`${day(Date.parse(today) + DAY_MS)}T00:00:00.000Z`);
    expect(query.get('bucket_width')).toBe('1d');
    expect(query.getAll('group_by[]')).toEqual(['model']);
    expect(first!.headers['x-api-key']).toBe(ADMIN_KEY);
    expect(first!.headers.authorization).toBeUndefined();
    expect(new URL(second!.path, admin.baseURL).searchParams.get('page')).toBe('page_MjAyNi0xMi0wMg==');
  });

  it('finds a planted difference and names the model, the bucket and the token kind, exiting 1', async () => {
    // One attempt's output counted 7 tokens higher on Anthropic's side.
    admin.reply(report(), report((row) => ({ ...row, output_tokens: (row.output_tokens as number) + 7 })));
    const { exitCode, io } = await reconcile();
    expect(exitCode).toBe(EXIT_DIFFERENCES);
    expect(io.lines[0]).toMatch(/^bucket\s+model\s+kind\s+ledger\s+anthropic\s+difference$/);
    expect(io.lines[1]).toMatch(new RegExp(`^${today}T00:00:00Z\\s+${MODEL}\\s+outputTokens\\s+240\\s+247\\s+-7$`));
    expect(io.lines.at(-1)).toMatch(/^reconcile anthropic: 1 difference \(/);
  });

  it('names a difference in 1-hour cache writes and in web searches apart, as JSON lines when asked', async () => {
    admin.reply(report(), report((row) => ({ ...row, cache_creation: { ephemeral_5m_input_tokens: 1_000, ephemeral_1h_input_tokens: 2_500 }, server_tool_use: { web_search_requests: 2 } })));
    const { exitCode, io } = await reconcile(['--json']);
    expect(exitCode).toBe(EXIT_DIFFERENCES);
    expect(io.json()).toEqual([
      { record: 'usage_difference', bucket: `${today}T00:00:00Z`, model: MODEL, kind: 'cacheWrite1hTokens', ledger: 2_000, provider: 2_500, difference: -500 },
      { record: 'usage_difference', bucket: `${today}T00:00:00Z`, model: MODEL, kind: 'webSearchRequests', ledger: 3, provider: 2, difference: 1 },
      expect.objectContaining({ record: 'summary', differences: 2, ledgerAttempts: 3 }),
    ]);
  });

  it('accepts a difference within the tolerance the operator sets, and passes an API key id on to the report', async () => {
    const before = admin.requests.length;
    admin.reply(report(), report((row) => ({ ...row, output_tokens: (row.output_tokens as number) + 7 })));
    const { exitCode } = await reconcile(['--tolerance', '7', '--api-key-id', 'apikey_01']);
    expect(exitCode).toBe(EXIT_OK);
    expect(new URL(admin.requests[before]!.path, admin.baseURL).searchParams.getAll('api_key_ids[]')).toEqual(['apikey_01']);
  });

  it('exits 3 when the report cannot be read, and never prints the key', async () => {
    admin.reply({ kind: 'json', status: 401, body: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } } });
    const { exitCode, io } = await reconcile();
    expect(exitCode).toBe(3);
    expect(io.stderrText).toMatch(/401/);
    expect(io.stderrText + io.stdoutText).not.toContain(ADMIN_KEY);
  });

  it('refuses to run without ANTHROPIC_ADMIN_API_KEY, or with a bucket or date it does not know', async () => {
    expect((await reconcile([], {})).exitCode).toBe(EXIT_USAGE);
    expect((await reconcile(['--bucket', '1m'])).exitCode).toBe(EXIT_USAGE);
    const backwards = new MemoryIo();
    expect(await runCli(['reconcile', 'anthropic', '--from', today, '--to', yesterday, '--store', storeUrl], { io: backwards, env: { ANTHROPIC_ADMIN_API_KEY: ADMIN_KEY } })).toBe(EXIT_USAGE);
    expect(backwards.stderrText).toMatch(/--to/);
  });
});
