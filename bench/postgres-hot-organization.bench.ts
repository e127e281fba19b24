import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { MAX_RUNNING_LIMIT } from '../src/accounts/account.bounds';
import { accountDecider } from '../src/accounts/account.decider';
import { accountStreamName } from '../src/accounts/account.events';
import { AggregateRepository } from '../src/aggregates/aggregate.repository';
import { openPostgresEventStore, POSTGRES_POSITION_INDEX_BITS } from '../src/event-store/postgres/postgres-event-store';
import { PostgresTestServer } from '../test/support/postgres-server';

/**
 * The hot-organization bound on PostgreSQL (docs/deploying.md): HOT_INSTANCES instance processes, each
 * with its own pool and AggregateRepository on one log, run HOT_IN_FLIGHT_PER_INSTANCE loops that place
 * a hold on ONE organization's account stream and settle it, as every gateway call and operation run
 * does, for HOT_DURATION_MS. Reports holds per second (a hold and its settlement: two decisions on the
 * stream), the decisions and appends per second the stream took, and decisions per append (commands
 * queued on one stream in a process are written together).
 *
 * Run alone: `npm run bench -- postgres-hot-organization`.
 */

const HOT_INSTANCES = 3;
const HOT_IN_FLIGHT_PER_INSTANCE = 16;
/** How long the instances hold and settle, in ms, after all have started. */
const HOT_DURATION_MS = 15_000;
/** The hold each call places, in credits; the organization is granted plenty for the run. */
const HOLD_CREDITS = 1_000;
const GRANTED_CREDITS = 1_000_000_000_000;
/** Marks the child processes (this same file, forked). */
const INSTANCE_FLAG = '--hot-organization-instance';

interface InstanceReport {
  readonly holds: number;
  readonly errors: Record<string, number>;
}

/** One instance process: waits for `go`, places and settles holds for HOT_DURATION_MS, reports. */
async function instance(url: string, stream: string): Promise<void> {
  const store = await openPostgresEventStore({ connectionString: url });
  const repository = new AggregateRepository(store);
  process.send!({ ready: true });
  await once(process, 'message');
  const until = Date.now() + HOT_DURATION_MS;
  let holds = 0;
  const errors: Record<string, number> = {};
  await Promise.all(Array.from({ length: HOT_IN_FLIGHT_PER_INSTANCE }, async () => {
    while (Date.now() < until) {
      const invocationId = randomUUID();
      try {
        await repository.handle(stream, accountDecider, { type: 'PlaceHold', data: { invocationId, credits: HOLD_CREDITS, placedAt: new Date().toISOString() } });
        await repository.handle(stream, accountDecider, { type: 'SettleHold', data: { invocationId, chargeCredits: HOLD_CREDITS / 2, settledAt: new Date().toISOString() } });
        holds += 1;
      } catch (error) {
        const name = error instanceof Error ? error.name : String(error);
        errors[name] = (errors[name] ?? 0) + 1;
      }
    }
  }));
  await store.close();
  process.send!({ holds, errors } satisfies InstanceReport);
}

async function startInstances(url: string, stream: string): Promise<ChildProcess[]> {
  const children = Array.from({ length: HOT_INSTANCES }, () => fork(__filename, [INSTANCE_FLAG, url, stream], { stdio: 'inherit' }));
  await Promise.all(children.map((child) => once(child, 'message')));
  return children;
}

export async function run(): Promise<unknown> {
  const server = await PostgresTestServer.start();
  try {
    const url = await server.createDatabase('hot');
    const stream = accountStreamName(`hot-${randomUUID()}`);
    const setup = await openPostgresEventStore({ connectionString: url });
    const repository = new AggregateRepository(setup);
    const now = new Date().toISOString();
    await repository.handle(stream, accountDecider, { type: 'GrantCredits', data: { credits: GRANTED_CREDITS, reason: 'bench', idempotencyKey: 'hot-grant', grantedAt: now } });
    await repository.handle(stream, accountDecider, { type: 'ChangeSettings', data: { aiEnabled: true, maxRunning: MAX_RUNNING_LIMIT, changedAt: now } });
    const before = (await setup.readStream(stream)).length;
    const children = await startInstances(url, stream);
    const reports = children.map((child) => once(child, 'message').then(([report]) => report as InstanceReport));
    const started = performance.now();
    for (const child of children) child.send('go');
    const done = await Promise.all(reports);
    const ms = performance.now() - started;
    await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
    const events = (await setup.readStream(stream)).slice(before);
    await setup.close();
    const appends = new Set(events.map((recorded) => recorded.position >> POSTGRES_POSITION_INDEX_BITS)).size;
    const holds = done.reduce((sum, report) => sum + report.holds, 0);
    const errors: Record<string, number> = {};
    for (const report of done) for (const [name, count] of Object.entries(report.errors)) errors[name] = (errors[name] ?? 0) + count;
    const result = {
      instances: HOT_INSTANCES,
      inFlightPerInstance: HOT_IN_FLIGHT_PER_INSTANCE,
      seconds: Math.round(ms / 100) / 10,
      holdsPerSecond: Math.round((holds / ms) * 1000),
      decisionsPerSecond: Math.round((events.length / ms) * 1000),
      appendsPerSecond: Math.round((appends / ms) * 1000),
      decisionsPerAppend: Math.round((events.length / appends) * 10) / 10,
      errors,
    };
    console.table([result]);
    return result;
  } finally {
    await server.stop();
  }
}

if (require.main === module) {
  if (process.argv[2] === INSTANCE_FLAG) {
    instance(process.argv[3]!, process.argv[4]!).then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  } else {
    run().catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
  }
}
