/**
 * `npm run simulate -- [options]`: runs seeded scenarios against the ledger and stops at the first
 * broken invariant, printing its seed, the command that replays it and the shortest history.
 *
 *   --seed N            the first seed (default 1)
 *   --seeds K           how many consecutive seeds to run (default 1)
 *   --minutes M         keep running consecutive seeds until M minutes of wall time have passed
 *   --invocations M     invocations per scenario (default 60)
 *   --store URL         LEDGER_STORE of the log; default a fresh SQLite file per scenario, or
 *                       EVENTSTORE_CONNECTION_STRING when that is set (EventStoreDB/KurrentDB); on
 *                       a PostgreSQL URL each scenario gets a fresh database on that server (the
 *                       URL's role needs CREATEDB), dropped after it unless --keep
 *   --every-boundary    arm each wave's crash at the next lifecycle boundary not yet hit (all of
 *                       them, before and after the write), instead of the scenario's own draw
 *   --keep-going        do not stop at a broken invariant: count them by name, list their seeds, go on
 *   --keep              keep each scenario's directory (its SQLite files)
 *   --logs              print the ledger's own log lines
 *   --json              one JSON line per scenario instead of text
 *
 * Wall time is read only to stop `--minutes`; nothing inside a scenario depends on it.
 */
import 'reflect-metadata';
import { isPostgresUrl, ScenarioDatabase } from './scenario-database';
import { runSimulation, type SimulationResult } from './simulator';
import { Tally } from './tally';

interface CliOptions {
  seed: number;
  seeds: number;
  minutes: number | undefined;
  invocations: number;
  store: string | undefined;
  keep: boolean;
  logs: boolean;
  json: boolean;
  everyBoundary: boolean;
  keepGoing: boolean;
}

const DEFAULT_INVOCATIONS = 60;
/** Most seeds one command runs, whatever `--seeds` or `--minutes` ask. */
const MAX_SEEDS_PER_COMMAND = 1_000_000;

function parse(argv: readonly string[]): CliOptions {
  const options: CliOptions = { seed: 1, seeds: 1, minutes: undefined, invocations: DEFAULT_INVOCATIONS, store: undefined, keep: false, logs: false, json: false, everyBoundary: false, keepGoing: false };
  const integer = (flag: string, value: string | undefined, min: number): number => {
    const parsed = Number(value);
    if (value === undefined || !Number.isSafeInteger(parsed) || parsed < min) throw new Error(`${flag} needs an integer >= ${min}, got ${String(value)}`);
    return parsed;
  };
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index]!;
    const value = argv[index + 1];
    switch (flag) {
      case '--seed':
        options.seed = integer(flag, value, 0);
        index++;
        break;
      case '--seeds':
        options.seeds = integer(flag, value, 1);
        index++;
        break;
      case '--minutes':
        options.minutes = integer(flag, value, 1);
        options.seeds = MAX_SEEDS_PER_COMMAND;
        index++;
        break;
      case '--invocations':
        options.invocations = integer(flag, value, 1);
        index++;
        break;
      case '--store':
        if (value === undefined) throw new Error('--store needs a LEDGER_STORE value');
        options.store = value;
        index++;
        break;
      case '--keep':
        options.keep = true;
        break;
      case '--keep-going':
        options.keepGoing = true;
        break;
      case '--every-boundary':
        options.everyBoundary = true;
        break;
      case '--logs':
        options.logs = true;
        break;
      case '--json':
        options.json = true;
        break;
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  options.store ??= process.env.EVENTSTORE_CONNECTION_STRING || undefined;
  return options;
}

/** Ids of a run on a shared EventStoreDB must not meet an earlier run's: prefix them with the seed and the start time. */
function namespaceFor(options: CliOptions, seed: number, startedAt: number): string | undefined {
  if (options.store === undefined || options.store.startsWith('sqlite:') || isPostgresUrl(options.store)) return undefined;
  return `sim${seed}-${startedAt.toString(36)}-`;
}

function line(result: SimulationResult, wallMs: number): string {
  const t = result.tally;
  return (
    `seed ${result.seed}: ok — ${result.invocations} invocations, ${result.events} events, ${result.waves} waves, ${result.checks} checks, ` +
    `${t.total('crash.')} crashes, ${t.total('provider.fault.')} provider faults, ${t.total('store.')} store faults, ` +
    `${Math.round(result.virtualMs / 1000)} virtual s, ${wallMs} ms, digest ${result.digest.slice(0, 12)}`
  );
}

async function main(): Promise<number> {
  const options = parse(process.argv.slice(2));
  const startedAt = Date.now();
  const deadline = options.minutes === undefined ? Number.POSITIVE_INFINITY : startedAt + options.minutes * 60_000;
  const total = new Tally();
  let scenarios = 0;
  let events = 0;
  /** Broken invariant → the seeds that broke it. */
  const failures = new Map<string, number[]>();
  for (let n = 0; n < options.seeds && n < MAX_SEEDS_PER_COMMAND && Date.now() < deadline; n++) {
    const seed = options.seed + n;
    const began = Date.now();
    const namespace = namespaceFor(options, seed, startedAt);
    const database = options.store !== undefined && isPostgresUrl(options.store) ? await ScenarioDatabase.create(options.store, `sim${seed}_${startedAt.toString(36)}`) : undefined;
    const store = database?.url ?? options.store;
    const result = await runSimulation({
      seed,
      invocations: options.invocations,
      ...(store === undefined ? {} : { store }),
      ...(namespace === undefined ? {} : { namespace }),
      keepDirectory: options.keep,
      logs: options.logs,
      crashAtEveryBoundary: options.everyBoundary,
    }).finally(() => (options.keep ? undefined : database?.drop()));
    scenarios += 1;
    events += result.events;
    total.merge(result.tally);
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ seed, ok: result.violation === undefined, events: result.events, digest: result.digest, tally: result.tally, violation: result.violation })}\n`);
    } else if (result.violation === undefined) {
      process.stdout.write(`${line(result, Date.now() - began)}\n`);
    }
    if (result.report !== undefined) {
      process.stderr.write(`${result.report}\n`);
      if (!options.keepGoing) return 1;
      const invariant = result.violation!.invariant;
      failures.set(invariant, [...(failures.get(invariant) ?? []), seed]);
    }
  }
  if (!options.json) {
    const wallSeconds = Math.round((Date.now() - startedAt) / 1000);
    const failed = [...failures.values()].reduce((sum, seeds) => sum + seeds.length, 0);
    process.stdout.write(
      `\n${scenarios - failed} of ${scenarios} scenario(s) of ${options.invocations} invocations passed (seeds ${options.seed}–${options.seed + scenarios - 1}, ${events} events, ${wallSeconds} s)\n` +
        `injected: ${total.total('crash.')} crashes, ${total.total('restart.')} restarts, ${total.total('provider.fault.')} provider faults, ` +
        `${total.total('store.')} store faults, ${total.total('tool.') - total.get('tool.answer')} tool misbehaviours, ${total.total('judge.') - total.get('judge.fair')} judge misbehaviours, ` +
        `${total.get('invocation.cancelled-by-caller')} cancellations, ${total.total('duplicate.')} repeated commands, ${total.total('sweep.')} sweep events\n`,
    );
    for (const [name, count] of total.entries()) process.stdout.write(`  ${name.padEnd(48)} ${count}\n`);
    for (const [invariant, seeds] of failures) process.stdout.write(`BROKEN ${invariant}: seeds ${seeds.join(', ')}\n`);
  }
  return failures.size > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  },
);
