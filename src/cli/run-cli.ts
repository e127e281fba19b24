import { existsSync } from 'node:fs';
import { ConfigurationError, loadLedgerConfig, type LedgerConfig } from '../config/ledger.config';
import type { EventStore } from '../event-store/event-store.port';
import { embeddedLogFile, embeddedLogPath, openEventStore } from '../event-store/open-event-store';
import { openReadModelStore, ReadStoreLock, type ReadStoreLockHolder, type SqliteReadModelStore } from '../projection-runner';
import { auditVerify } from './audit-verify.command';
import { hasFlag, optionValue, parseArgs, type OptionSpec, type ParsedArgs } from './cli-args';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError, writeLine, type CliIo } from './cli-io';
import { projectionsRebuild } from './projections-rebuild.command';
import { reconcileAnthropic } from './reconcile-anthropic.command';
import { streamsRead } from './streams-read.command';

/** What the CLI runs with: its I/O and the environment it reads its defaults from. */
export interface CliContext {
  readonly io: CliIo;
  readonly env: Readonly<Record<string, string | undefined>>;
}

interface CommandDefinition {
  readonly group: string;
  readonly name: string;
  readonly summary: string;
  readonly positionals: readonly string[];
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Paragraphs after the options in `--help`. */
  readonly notes: readonly string[];
  run(args: ParsedArgs, context: CliContext): Promise<number>;
}

const STORE_OPTION: OptionSpec = {
  value: '<url>',
  description: 'the event store: sqlite:<path> or an esdb://… connection string (default: $LEDGER_STORE, else sqlite:./var/ledger.sqlite)',
};
const READ_STORE_OPTION: OptionSpec = {
  value: '<path>',
  description: "the read-model SQLite file (default: $LEDGER_READ_STORE, or the file beside the store's: ledger.sqlite → ledger.read.sqlite)",
};

const COMMANDS: readonly CommandDefinition[] = [
  {
    group: 'audit',
    name: 'verify',
    summary: 'rebuild every read model from position 0, compare it with the live one, and audit every balance',
    positionals: [],
    options: {
      store: STORE_OPTION,
      'read-store': READ_STORE_OPTION,
      json: { description: 'print each difference, and the summary, as one JSON object per line' },
    },
    notes: [
      'Rebuilds every projection into a scratch in-memory store and compares it with the live read models;',
      'recomputes each balance from its account stream and cross-checks it against the charges settled in',
      'the invocation streams; checks available = granted + adjustments - charged - held in the balances.',
      'Prints one line per difference, then a summary. Exit status: 0 nothing differs, 1 something differs,',
      '2 bad arguments or no store at the path given, 3 a store could not be read.',
    ],
    async run(args, context) {
      return withStores(args, context, { readStore: 'must-exist' }, async ({ eventStore, readStore, config }) => {
        const result = await auditVerify({
          eventStore,
          readStore: readStore!,
          io: context.io,
          json: hasFlag(args, 'json'),
          positionsCountEvents: embeddedLogPath(config.store) !== undefined,
        });
        return result.exitCode;
      });
    },
  },
  {
    group: 'streams',
    name: 'read',
    summary: 'print a stream as JSON lines',
    positionals: ['name'],
    options: {
      store: STORE_OPTION,
      from: { value: '<revision>', description: 'first revision to print (0-based, inclusive; default 0)' },
    },
    notes: [
      'Streams are named <category>-<id>: operation-<operationId>, account-<organizationId>, invocation-<invocationId>.',
      'Each line is { streamName, revision, position, id, type, recordedAt, data, metadata }; revision and',
      'position are decimal strings. Exit status: 0 printed, 2 bad arguments or no such stream, 3 the store failed.',
    ],
    async run(args, context) {
      const from = optionValue(args, 'from');
      const fromRevision = from === undefined ? undefined : parseRevision(from);
      return withStores(args, context, { readStore: 'none' }, ({ eventStore }) =>
        streamsRead({ eventStore, io: context.io, streamName: args.positionals[0]!, ...(fromRevision === undefined ? {} : { fromRevision }) }),
      );
    },
  },
  {
    group: 'projections',
    name: 'rebuild',
    summary: 'rebuild read models from position 0 into the live read-model store',
    positionals: [],
    options: {
      store: STORE_OPTION,
      'read-store': READ_STORE_OPTION,
      projection: { value: '<name>', repeatable: true, description: 'rebuild only this projection (repeatable; default: all)' },
    },
    notes: [
      'Stop the service first: it holds the read-model store\'s lock while it runs, and the rebuild refuses',
      '(exit 3) while the lock is held.',
      'With the embedded store and more than one core, the projections are rebuilt in groups on worker threads.',
      'Progress goes to stderr: a bar on a terminal, plain lines otherwise. Exit status: 0 rebuilt,',
      '1 a projection stopped on an event it could not apply, 2 bad arguments or an unknown projection, 3 a store failed.',
    ],
    async run(args, context) {
      return withStores(args, context, { readStore: 'create', lock: 'rebuild' }, ({ eventStore, readStore, config }) => {
        const logPath = embeddedLogFile(config.store);
        return projectionsRebuild({
          eventStore,
          readStore: readStore!,
          io: context.io,
          names: args.options.get('projection') ?? [],
          positionsCountEvents: embeddedLogPath(config.store) !== undefined,
          ...(logPath === undefined ? {} : { logPath }),
        });
      });
    },
  },
  {
    group: 'reconcile',
    name: 'anthropic',
    summary: "compare the usage of the ledger's Anthropic attempts with Anthropic's own usage report",
    positionals: [],
    options: {
      store: STORE_OPTION,
      from: { value: '<YYYY-MM-DD>', description: 'first UTC day of the period, included (required)' },
      to: { value: '<YYYY-MM-DD>', description: 'last UTC day of the period, included (required)' },
      bucket: { value: '<1h|1d>', description: 'compare per hour or per day (default 1d)' },
      'api-key-id': { value: '<id>', description: "only this Anthropic API key's usage on Anthropic's side (the key the service uses)" },
      tolerance: { value: '<tokens>', description: 'largest difference per bucket, model and kind that passes (default 0: exact)' },
      json: { description: 'print each difference, and the summary, as one JSON object per line' },
    },
    notes: [
      "Reads Anthropic's Messages usage report (Admin API, GET /v1/organizations/usage_report/messages) with",
      'the Admin API key in ANTHROPIC_ADMIN_API_KEY (at ANTHROPIC_BASE_URL when set), grouped by model, and',
      'sums the usage of every attempt the ledger recorded for invocations routed to anthropic, by the model',
      'that answered and the bucket of the attempt\'s start. Compares uncached input, 5-minute and 1-hour',
      'cache writes, cache reads, output and web searches, and prints one line per difference past the',
      'tolerance. The report counts every use of the key: give --api-key-id when other software shares the',
      'organization. Exit status: 0 they agree, 1 a difference, 2 bad arguments, 3 a store or the report failed.',
    ],
    async run(args, context) {
      const adminApiKey = context.env.ANTHROPIC_ADMIN_API_KEY;
      if (adminApiKey === undefined || adminApiKey.trim() === '') throw new UsageError('reconcile anthropic needs an Admin API key in ANTHROPIC_ADMIN_API_KEY');
      const from = utcDayOption(args, 'from');
      const to = utcDayOption(args, 'to');
      if (to < from) throw new UsageError(`--to (${to}) must not be before --from (${from})`);
      if ((Date.parse(to) - Date.parse(from)) / MS_PER_DAY + 1 > MAX_RECONCILE_DAYS) throw new UsageError(`--from to --to may cover at most ${MAX_RECONCILE_DAYS} days`);
      const bucket = optionValue(args, 'bucket') ?? '1d';
      if (bucket !== '1h' && bucket !== '1d') throw new UsageError(`--bucket must be 1h or 1d, got ${JSON.stringify(bucket)}`);
      const toleranceText = optionValue(args, 'tolerance') ?? '0';
      if (!/^\d{1,15}$/.test(toleranceText)) throw new UsageError(`--tolerance must be a whole number of tokens, got ${JSON.stringify(toleranceText)}`);
      const apiKeyId = optionValue(args, 'api-key-id');
      const baseURL = context.env.ANTHROPIC_BASE_URL;
      return withStores(args, context, { readStore: 'none' }, async ({ eventStore }) => {
        const result = await reconcileAnthropic({
          eventStore,
          io: context.io,
          adminApiKey,
          ...(baseURL === undefined || baseURL === '' ? {} : { baseURL }),
          from,
          to,
          bucket,
          ...(apiKeyId === undefined ? {} : { apiKeyId }),
          toleranceTokens: Number(toleranceText),
          json: hasFlag(args, 'json'),
        });
        return result.exitCode;
      });
    },
  },
];

/**
 * Runs `llm-ledger <group> <command> [options]` and resolves to the exit code. Never throws: a usage
 * mistake is EXIT_USAGE with its message, any other failure EXIT_FAILURE with its message, on stderr.
 */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  const { io } = context;
  try {
    const [group, name, ...rest] = argv;
    if (group === undefined || group === '--help' || group === '-h' || group === 'help') {
      await io[group === undefined ? 'stderr' : 'stdout'].write(mainHelp());
      return group === undefined ? EXIT_USAGE : EXIT_OK;
    }
    const commands = COMMANDS.filter((command) => command.group === group);
    if (commands.length === 0) throw new UsageError(`unknown command ${JSON.stringify(group)}; run llm-ledger --help`);
    if (name === undefined || name === '--help' || name === '-h') {
      await io[name === undefined ? 'stderr' : 'stdout'].write(groupHelp(group, commands));
      return name === undefined ? EXIT_USAGE : EXIT_OK;
    }
    const command = commands.find((candidate) => candidate.name === name);
    if (command === undefined) throw new UsageError(`unknown command "${group} ${name}"; run llm-ledger ${group} --help`);
    const args = parseCommandArgs(command, rest);
    if (args.help) {
      await io.stdout.write(commandHelp(command));
      return EXIT_OK;
    }
    return await command.run(args, context);
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigurationError) {
      await writeLine(io.stderr, `llm-ledger: ${error.message}`);
      return EXIT_USAGE;
    }
    await writeLine(io.stderr, `llm-ledger: ${error instanceof Error ? error.message : String(error)}`);
    return EXIT_FAILURE;
  }
}

function parseCommandArgs(command: CommandDefinition, argv: readonly string[]): ParsedArgs {
  try {
    return parseArgs(argv, { options: command.options, positionals: command.positionals });
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(`${command.group} ${command.name}: ${error.message}; run llm-ledger ${command.group} ${command.name} --help`);
    throw error;
  }
}

/** The longest period `reconcile` compares, in days. */
const MAX_RECONCILE_DAYS = 366;
const MS_PER_DAY = 86_400_000;

/** A required `YYYY-MM-DD` option naming a real UTC day. */
function utcDayOption(args: ParsedArgs, name: string): string {
  const value = optionValue(args, name);
  if (value === undefined) throw new UsageError(`--${name} <YYYY-MM-DD> is required`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || new Date(`${value}T00:00:00Z`).toISOString().slice(0, 10) !== value) {
    throw new UsageError(`--${name} must be a UTC day, YYYY-MM-DD, got ${JSON.stringify(value)}`);
  }
  return value;
}

function parseRevision(text: string): bigint {
  // Decimal digits only: `BigInt` would also take hex, binary and surrounding spaces.
  if (!/^\d{1,20}$/.test(text)) throw new UsageError(`--from must be a revision (a non-negative integer), got ${JSON.stringify(text)}`);
  return BigInt(text);
}

interface OpenedStores {
  readonly config: LedgerConfig;
  readonly eventStore: EventStore;
  /** Opened unless the command asked for none. */
  readonly readStore: SqliteReadModelStore | undefined;
}

/**
 * Resolves where the stores are (the service's own variables, overridden by --store/--read-store),
 * opens them, runs `body`, and closes them. An embedded store file that does not exist is a usage
 * error: opening it would create an empty one, and auditing that proves nothing.
 */
async function withStores(
  args: ParsedArgs,
  context: CliContext,
  needs: { readonly readStore: 'none' | 'must-exist' | 'create'; readonly lock?: ReadStoreLockHolder },
  body: (stores: OpenedStores) => Promise<number>,
): Promise<number> {
  const config = storeConfig(args, context.env);
  const logFile = embeddedLogFile(config.store);
  if (logFile !== undefined && !existsSync(logFile)) {
    throw new UsageError(`no event store at ${logFile} (set --store or LEDGER_STORE)`);
  }
  if (needs.readStore === 'must-exist' && config.readStorePath !== ':memory:' && !existsSync(config.readStorePath)) {
    throw new UsageError(`no read-model store at ${config.readStorePath} (set --read-store or LEDGER_READ_STORE)`);
  }
  // Taken before anything is opened: a running service holds it, and nothing is touched then.
  const lock = needs.lock === undefined ? undefined : ReadStoreLock.acquire(config.readStorePath, needs.lock);
  try {
    const eventStore = await openEventStore(config.store, { synchronous: config.sqliteSynchronous, allowAsyncCommit: config.postgresAllowAsyncCommit });
    let readStore: SqliteReadModelStore | undefined;
    try {
      if (needs.readStore !== 'none') readStore = openReadModelStore({ path: config.readStorePath });
      return await body({ config, eventStore, readStore });
    } finally {
      readStore?.close();
      await eventStore.close();
    }
  } finally {
    lock?.release();
  }
}

/**
 * The locations as the service would resolve them. Only the store variables are read, so a variable
 * the CLI does not use (a token list, a port) can never stop an audit. With --store and no
 * --read-store, the read store is the one beside that store, not $LEDGER_READ_STORE (which belongs
 * to $LEDGER_STORE).
 */
function storeConfig(args: ParsedArgs, env: CliContext['env']): LedgerConfig {
  const store = optionValue(args, 'store');
  const readStore = optionValue(args, 'read-store');
  return loadLedgerConfig({
    LEDGER_STORE: store ?? env.LEDGER_STORE,
    LEDGER_READ_STORE: readStore ?? (store === undefined ? env.LEDGER_READ_STORE : undefined),
    LEDGER_SQLITE_SYNCHRONOUS: env.LEDGER_SQLITE_SYNCHRONOUS,
  });
}

function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => `${command.group} ${command.name}`.length));
  return [
    'Usage: llm-ledger <command> [options]',
    '',
    "The auditors' tools of llm-ledger. Stores default to the service's own LEDGER_STORE and LEDGER_READ_STORE.",
    '',
    'Commands:',
    ...COMMANDS.map((command) => `  ${`${command.group} ${command.name}`.padEnd(width)}  ${command.summary}`),
    '',
    'Run llm-ledger <command> --help for its options.',
    '',
  ].join('\n');
}

function groupHelp(group: string, commands: readonly CommandDefinition[]): string {
  return [
    `Usage: llm-ledger ${group} <command> [options]`,
    '',
    'Commands:',
    ...commands.map((command) => `  ${command.name}  ${command.summary}`),
    '',
  ].join('\n');
}

function commandHelp(command: CommandDefinition): string {
  const positionals = command.positionals.map((name) => ` <${name}>`).join('');
  const options = Object.entries(command.options).map(([name, option]) => [`--${name}${option.value === undefined ? '' : ` ${option.value}`}`, option.description] as const);
  options.push(['--help', 'show this help']);
  const width = Math.max(...options.map(([flag]) => flag.length));
  return [
    `Usage: llm-ledger ${command.group} ${command.name}${positionals} [options]`,
    '',
    `${command.summary[0]!.toUpperCase()}${command.summary.slice(1)}.`,
    '',
    'Options:',
    ...options.map(([flag, description]) => `  ${flag.padEnd(width)}  ${description}`),
    '',
    ...command.notes,
    '',
  ].join('\n');
}
