/**
 * The balances read model's work per gateway call on the projection worker, at the holds an
 * organization may have in flight (up to MAX_RUNNING_LIMIT): a call's HoldPlaced applied in one live
 * transaction and its HoldSettled in the next, through the SQLite read store on a file (WAL,
 * synchronous NORMAL, as the service opens it), CALLS_PER_BATCH calls to a transaction as the live
 * runner batches them at about 500 calls/s (bench/README.md "The balances read model").
 *
 * Run alone: `npx tsc -p tsconfig.build.json && node dist/bench/balances-projection.bench.js`
 * (BENCH_BALANCES_BATCHES, transactions measured per shape).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BALANCES_PROJECTION, balancesProjection, readBalanceView } from '../projections';
import type { AccountEvent } from '../src/accounts/account.events';
import type { RecordedEvent } from '../src/event-store/event-store.port';
import { openReadModelStore, type SqliteReadModelStore } from '../src/projection-runner';

/**
 * Holds in flight besides the calls of the two transactions a call spans, so at most 50, 64 and
 * 1,000 (MAX_RUNNING_LIMIT) are in flight at once.
 */
const HOLDS_IN_FLIGHT: readonly number[] = [0, 14, 950];
/** Calls per live transaction: about 500 calls/s over the runner's 50 ms live batch window. */
const CALLS_PER_BATCH = 25;
const DEFAULT_BATCHES = 400;
/** Balance reads timed per shape, after its calls. */
const BALANCE_READS = 200;
/** Unmeasured transactions per shape before its measured ones (JIT, the file's first pages). */
const WARMUP_BATCHES = 50;
const AT = '2026-12-05T10:00:00.000Z';

interface ShapeResult {
  readonly holdsInFlight: number;
  readonly calls: number;
  readonly p50MicrosPerCall: number;
  readonly p99MicrosPerCall: number;
  readonly meanMicrosPerCall: number;
  /** The balance as the read side answers it (GetBalanceQuery: the figures and every open hold, one snapshot), µs, mean. */
  readonly balanceReadMicros: number;
}

class AccountLog {
  private position = 0;

  event(data: AccountEvent): RecordedEvent {
    this.position += 1;
    return { ...data, id: 'bench', streamName: 'account-bench', revision: BigInt(this.position - 1), position: BigInt(this.position), metadata: { schemaVersion: 1 }, recordedAt: AT } as RecordedEvent;
  }
}

function apply(store: SqliteReadModelStore, events: readonly RecordedEvent[]): void {
  store.write((session) => {
    const tx = session.documents(BALANCES_PROJECTION);
    for (const event of events) balancesProjection.apply(event as never, tx);
  });
}

const placed = (invocationId: string): AccountEvent => ({ type: 'HoldPlaced', data: { invocationId, credits: 10, placedAt: AT } });
const settled = (invocationId: string): AccountEvent => ({ type: 'HoldSettled', data: { invocationId, heldCredits: 10, chargedCredits: 5, settledAt: AT } });

function measure(directory: string, holdsInFlight: number, batches: number): ShapeResult {
  const store = openReadModelStore({ path: join(directory, `balances-${holdsInFlight}.read.sqlite`) });
  try {
    const log = new AccountLog();
    apply(store, [log.event({ type: 'CreditsGranted', data: { credits: 1_000_000_000_000, reason: 'bench', idempotencyKey: 'grant-1', grantedAt: AT } })]);
    if (holdsInFlight > 0) apply(store, Array.from({ length: holdsInFlight }, (_, hold) => log.event(placed(`open-${hold}`))));
    let previous: string[] = [];
    const perCall: number[] = [];
    let measuredMicros = 0;
    for (let batch = 0; batch < WARMUP_BATCHES + batches; batch++) {
      const calls = Array.from({ length: CALLS_PER_BATCH }, (_, call) => `call-${batch}-${call}`);
      const events = [...previous.map((id) => log.event(settled(id))), ...calls.map((id) => log.event(placed(id)))];
      const started = process.hrtime.bigint();
      apply(store, events);
      const micros = Number(process.hrtime.bigint() - started) / 1_000;
      if (batch >= WARMUP_BATCHES) {
        perCall.push(micros / CALLS_PER_BATCH);
        measuredMicros += micros;
      }
      previous = calls;
    }
    perCall.sort((a, b) => a - b);
    const at = (quantile: number): number => Math.round(perCall[Math.min(perCall.length - 1, Math.floor(quantile * perCall.length))]! * 10) / 10;
    const calls = batches * CALLS_PER_BATCH;
    return { holdsInFlight, calls, p50MicrosPerCall: at(0.5), p99MicrosPerCall: at(0.99), meanMicrosPerCall: Math.round((measuredMicros / calls) * 10) / 10, balanceReadMicros: timeBalanceReads(store, holdsInFlight + CALLS_PER_BATCH) };
  } finally {
    store.close();
  }
}

/** Mean µs of the balance as GetBalanceQuery reads it; checks it lists `openHolds` holds. */
function timeBalanceReads(store: SqliteReadModelStore, openHolds: number): number {
  const started = process.hrtime.bigint();
  for (let read = 0; read < BALANCE_READS; read++) {
    const view = store.readSnapshot(() => readBalanceView(store, 'bench'));
    if (view === undefined || view.running !== openHolds || Object.keys(view.openHolds).length !== openHolds) throw new Error(`the balance read ${view?.running} holds in flight, not ${openHolds}`);
  }
  return Math.round(Number(process.hrtime.bigint() - started) / 1_000 / BALANCE_READS);
}

export async function run(): Promise<unknown> {
  const batches = Number(process.env.BENCH_BALANCES_BATCHES ?? DEFAULT_BATCHES);
  if (!Number.isInteger(batches) || batches < 1) throw new Error(`BENCH_BALANCES_BATCHES: expected a positive integer, got "${process.env.BENCH_BALANCES_BATCHES}"`);
  const loadAtStart = loadavg()[0]!;
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-balances-bench-'));
  try {
    const results = HOLDS_IN_FLIGHT.map((holds) => measure(directory, holds, batches));
    console.table(
      Object.fromEntries(
        results.map((result) => [
          `at most ${result.holdsInFlight + 2 * CALLS_PER_BATCH} holds in flight`,
          { 'µs per call p50': result.p50MicrosPerCall, 'µs per call p99': result.p99MicrosPerCall, 'µs per call mean': result.meanMicrosPerCall, calls: result.calls, 'balance read µs': result.balanceReadMicros },
        ]),
      ),
    );
    const smallest = results[0]!;
    const largest = results[results.length - 1]!;
    console.log(`most over fewest holds in flight: ×${Math.round((largest.meanMicrosPerCall / smallest.meanMicrosPerCall) * 100) / 100} the µs per call; load average ${loadAtStart.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end`);
    return { callsPerBatch: CALLS_PER_BATCH, shapes: results };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
