import { runSimulation, type SimulationResult } from '../../src/simulation/simulator';

/** The seed and size of the run; chosen so one run meets every gateway scenario below (8 until leases were drawn). */
const SEED = 17;
const INVOCATIONS = 200;
// One seeded run of 200 invocations and about as many gateway calls: a minute on a loaded machine.
const TIMEOUT_MS = 300_000;

/** What upstream did for admitted calls (gateway-upstream.ts). */
const UPSTREAM = ['ok', 'over-report', 'malformed-usage', 'error-status', 'error-mid-stream', 'no-usage', 'timeout', 'timeout-after-usage', 'caller-disconnect', 'crash-mid-call'];

describe('issue 23: the simulator drives gateway calls beside operations, through faults, crashes and concurrent keys (docs/gateway.md)', () => {
  let result: SimulationResult;

  beforeAll(async () => {
    result = await runSimulation({ seed: SEED, invocations: INVOCATIONS });
    if (result.report !== undefined) throw new Error(result.report);
  }, TIMEOUT_MS);

  const counted = (names: readonly string[]): Record<string, number> => Object.fromEntries(names.map((name) => [name, result.tally.get(name)]));
  const expectEveryCounted = (names: readonly string[]): void => {
    const counts = counted(names);
    expect(Object.entries(counts).filter(([, count]) => count === 0)).toEqual([]);
  };

  it('breaks no invariant: every gateway hold within its key’s limit, charged Σ prices at most the hold, released, explained', () => {
    expect(result.violation).toBeUndefined();
    expect(result.tally.get('gateway.call')).toBeGreaterThan(INVOCATIONS / 2);
  });

  it('admits calls through both processes’ accounting, in bursts on one key, and meets every upstream answer', () => {
    expectEveryCounted(['gateway.admitted', 'gateway.call.by-second-process', 'gateway.call.in-burst', ...UPSTREAM.map((kind) => `gateway.upstream.${kind}`)]);
  });

  it('settles each path as docs/gateway.md says: at the price (capped at the hold for an over-report), failed at the usage seen, unmeasured at the hold', () => {
    expectEveryCounted([
      'observed.gateway-call-settled.transition-8',
      'observed.gateway-call-settled.transition-8.capped-at-its-hold',
      'observed.gateway-call-settled.transition-9',
      'observed.gateway-call-settled.transition-10',
      'checked.gateway-charge-within-hold',
      'checked.gateway-hold-is-the-worst-case',
      'checked.gateway-estimate',
    ]);
  });

  it('issue 31: charges every call whose upstream reported a final usage at least its price and at most its hold, any difference an overrun on record; malformed usage at the hold', () => {
    expectEveryCounted([
      'observed.gateway-overrun-recorded',
      'checked.gateway-upstream-report.usage',
      'checked.gateway-upstream-report.malformed',
      'checked.gateway-charge-against-upstream.usage',
      'checked.gateway-charge-against-upstream.malformed',
    ]);
  });

  it('kills the process mid-call, and recovery or a sweep settles the call at its hold (transition 14)', () => {
    expectEveryCounted(['crash.mid-gateway-call']);
    expect(result.tally.total('observed.gateway-call-settled.transition-14')).toBeGreaterThan(0);
  });

  it('refuses what the key, the rate card and the account refuse, each refusal explained (401, 403, 404, 400, 402, 429)', () => {
    expectEveryCounted([
      'gateway.refused.401',
      'gateway.refused.403',
      'gateway.refused.404',
      'gateway.refused.400',
      'gateway.refused.402.recorded',
      'gateway.refused.429.recorded',
      'checked.gateway-refusal.insufficient_credits',
      'checked.gateway-refusal.key_spend_limit',
      'checked.gateway-refusal.no_running_slot',
    ]);
  });

  it('issue 31 finding 2: pauses each process within its lease and past it, and recovery settles owned calls only by a lapsed lease or a passed deadline', () => {
    expectEveryCounted([
      'lease.paused.node.within-its-lease',
      'lease.paused.node.past-its-lease',
      'lease.paused.second.within-its-lease',
      'lease.paused.second.past-its-lease',
      // A paused process's late write, refused because recovery settled what its lapsed lease owned.
      'recovery.refused-a-late-write.lease-expired',
      'checked.recovery-of-an-owned-invocation.lease-expired',
      'checked.recovery-of-an-owned-invocation.deadline-passed',
    ]);
  });

  it('checks keys with day, month and total limits, changes and revokes keys and re-prices the rate card while calls run, and rolls periods over at UTC midnight', () => {
    expectEveryCounted([
      'gateway.key-changed-mid-flight',
      'gateway.key-revoked-mid-flight',
      'gateway.rate-card-changed-mid-flight',
      'checked.gateway-key-limit.day',
      'checked.gateway-key-limit.month',
      'checked.gateway-key-limit.total',
      'checked.gateway-key-limit.none',
    ]);
    expect(result.tally.total('observed.gateway-key-period-rolled-over.')).toBeGreaterThan(0);
  });

  it('issue 33: holds calls against their key’s team too, refuses team_spend_limit explained, and records budget alerts once', () => {
    const met = ['gateway.team-created', 'checked.gateway-team-limit.', 'checked.gateway-refusal.team_spend_limit', 'checked.gateway-budget-alert.team'].map((name) => [name, result.tally.total(name)]);
    expect(met.filter(([, count]) => count === 0)).toEqual([]);
  });
});

/** A seed whose keys meet their rate limits often (seed 17's keys without spend limits rarely do). */
const RATE_LIMITS_SEED = 2;

describe('issue 33: the simulator issues keys with expiresAt and rate limits (docs/gateway.md "Rate limits")', () => {
  let result: SimulationResult;

  beforeAll(async () => {
    result = await runSimulation({ seed: RATE_LIMITS_SEED, invocations: INVOCATIONS });
    if (result.report !== undefined) throw new Error(result.report);
  }, TIMEOUT_MS);

  it('holds every call before its key’s expiry and within maxConcurrent, requestsPerMinute and tokensPerMinute as the log counts them; refusals key_rate_limit and max_tokens_over_tokens_per_minute explained by their figures', () => {
    expect(result.violation).toBeUndefined();
    const met = ['checked.gateway-key-rate-limits', 'checked.gateway-refusal.key_rate_limit', 'checked.gateway-refusal.max_tokens_over_tokens_per_minute', 'gateway.key-rotated-mid-flight'].map((name) => [name, result.tally.total(name)]);
    expect(met.filter(([, count]) => count === 0)).toEqual([]);
  });
});
