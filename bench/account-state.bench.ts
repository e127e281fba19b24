/**
 * The account's own work per gateway call, at the sizes an organization may reach: its keys (up to
 * MAX_GATEWAY_KEYS_PER_ORGANIZATION) and its holds in flight (up to MAX_RUNNING_LIMIT). Per call, what
 * the AggregateRepository does on a warm account: PlaceHold decided on the state, its HoldPlaced
 * evolved into the state it remembers, then SettleHold decided and its HoldSettled evolved. No store,
 * no I/O: the CPU a call's account decisions take on the main thread, which every other call waits
 * behind (bench/README.md "The account's maps").
 *
 * Run alone: `npx tsc -p tsconfig.build.json && node dist/bench/account-state.bench.js`
 * (BENCH_ACCOUNT_CALLS, calls measured per shape).
 */
import { loadavg } from 'node:os';
import { accountDecider } from '../src/accounts/account.decider';
import type { AccountCommand } from '../src/accounts/account.commands';
import type { AccountState } from '../src/accounts/account.state';

/**
 * The shapes measured: keys held and holds in flight before the call (999 and the call make
 * MAX_RUNNING_LIMIT). The first is the gateway benchmark's organization.
 */
const SHAPES: readonly { readonly keys: number; readonly holds: number }[] = [
  { keys: 1, holds: 16 },
  { keys: 1, holds: 999 },
  { keys: 1_000, holds: 16 },
  { keys: 1_000, holds: 999 },
];
const DEFAULT_CALLS = 5_000;
/** Unmeasured calls per shape before its measured ones (JIT). */
const WARMUP_CALLS = 1_000;
/** Calls timed together; the p50/p99 are of these batches' µs per call (a timer read per call would weigh more than a call). */
const BATCH_CALLS = 50;
const AT = '2026-12-05T10:00:00.000Z';
const GRANT_CREDITS = 1_000_000_000_000;

function hashOf(index: number): string {
  return index.toString(16).padStart(64, '0');
}

function apply(state: AccountState, command: AccountCommand): AccountState {
  return accountDecider.decide(command, state).reduce(accountDecider.evolve, state);
}

/** A gateway call's PlaceHold on a key, as GatewayCalls sends it. */
function placeHold(invocationId: string, key: number): AccountCommand {
  return {
    type: 'PlaceHold',
    data: { invocationId, credits: 10, placedAt: AT, gatewayKey: { keyId: `key-${key}`, period: '' }, gatewayCall: { model: 'm', maxTokens: 10, tokens: 100, keyHash: hashOf(key) } },
  };
}

function settleHold(invocationId: string): AccountCommand {
  return { type: 'SettleHold', data: { invocationId, chargeCredits: 5, settledAt: AT, reportedTokens: 50 } };
}

/** An account with `keys` keys (a spend limit and rate limits each, so every check runs) and `holds` calls in flight on them. */
function accountOf(keys: number, holds: number): AccountState {
  let state = apply(accountDecider.initialState(), { type: 'GrantCredits', data: { credits: GRANT_CREDITS, reason: 'bench', idempotencyKey: 'grant-1', grantedAt: AT } });
  state = apply(state, { type: 'ChangeSettings', data: { maxRunning: 1_000, changedAt: AT } });
  for (let key = 0; key < keys; key++) {
    const settings = { name: `key ${key}`, spendLimit: { credits: GRANT_CREDITS, period: 'month' as const }, requestsPerMinute: 1_000_000, tokensPerMinute: 1_000_000_000 };
    state = apply(state, { type: 'IssueGatewayKey', data: { keyId: `key-${key}`, keyHash: hashOf(key), issuedAt: AT, ...settings } } as AccountCommand);
  }
  for (let hold = 0; hold < holds; hold++) state = apply(state, placeHold(`open-${hold}`, hold % keys));
  return state;
}

interface ShapeResult {
  readonly keys: number;
  readonly holds: number;
  readonly calls: number;
  readonly p50MicrosPerCall: number;
  readonly p99MicrosPerCall: number;
  readonly meanMicrosPerCall: number;
}

function measure(keys: number, holds: number, calls: number): ShapeResult {
  let state = accountOf(keys, holds);
  let next = 0;
  const oneCall = (): void => {
    const invocationId = `call-${next++}`;
    state = apply(state, placeHold(invocationId, 0));
    state = apply(state, settleHold(invocationId));
  };
  for (let index = 0; index < WARMUP_CALLS; index++) oneCall();
  const perCall: number[] = [];
  const started = process.hrtime.bigint();
  for (let done = 0; done < calls; done += BATCH_CALLS) {
    const batchStarted = process.hrtime.bigint();
    for (let index = 0; index < BATCH_CALLS; index++) oneCall();
    perCall.push(Number(process.hrtime.bigint() - batchStarted) / 1_000 / BATCH_CALLS);
  }
  const total = Number(process.hrtime.bigint() - started) / 1_000;
  if (state.openHolds.size !== holds) throw new Error(`the account ended with ${state.openHolds.size} holds in flight, not ${holds}`);
  perCall.sort((a, b) => a - b);
  const at = (quantile: number): number => Math.round(perCall[Math.min(perCall.length - 1, Math.floor(quantile * perCall.length))]! * 10) / 10;
  return { keys, holds, calls: perCall.length * BATCH_CALLS, p50MicrosPerCall: at(0.5), p99MicrosPerCall: at(0.99), meanMicrosPerCall: Math.round((total / (perCall.length * BATCH_CALLS)) * 10) / 10 };
}

export async function run(): Promise<unknown> {
  const calls = Number(process.env.BENCH_ACCOUNT_CALLS ?? DEFAULT_CALLS);
  const loadAtStart = loadavg()[0]!;
  const results = SHAPES.map(({ keys, holds }) => measure(keys, holds, calls));
  console.table(
    Object.fromEntries(
      results.map((result) => [
        `${result.keys} keys, ${result.holds} holds in flight`,
        { 'µs per call p50': result.p50MicrosPerCall, 'µs per call p99': result.p99MicrosPerCall, 'µs per call mean': result.meanMicrosPerCall, calls: result.calls },
      ]),
    ),
  );
  const smallest = results[0]!;
  const largest = results[results.length - 1]!;
  console.log(`largest over smallest account: ×${Math.round((largest.meanMicrosPerCall / smallest.meanMicrosPerCall) * 100) / 100} the µs per call; load average ${loadAtStart.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end`);
  return { shapes: results };
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
