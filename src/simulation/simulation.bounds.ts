/**
 * Every bound of the simulator, named once with its unit (after TigerBeetle's TIGER_STYLE). Times are virtual
 * milliseconds on the simulation clock unless the name says otherwise.
 */
import { DEFAULT_LEASE_DURATION_MS } from '../domain/recovery.settings';

/**
 * Where virtual time starts: 2099-12-31T23:55:00Z, far past any wall-clock `recordedAt` the store
 * writes, and five minutes before a UTC midnight that ends a day, a month and a year, so gateway
 * keys' day and month periods roll over while calls run.
 */
export const SIMULATION_EPOCH_MS = Date.UTC(2099, 11, 31, 23, 55);

/** Invocations a scenario may ask for (`--invocations`). */
export const MAX_SCENARIO_INVOCATIONS = 5_000;
/** Invocations started per wave, at least and at most. */
export const MIN_WAVE_INVOCATIONS = 6;
export const MAX_WAVE_INVOCATIONS = 16;
/** Waves a scenario may have; with MIN_WAVE_INVOCATIONS this covers MAX_SCENARIO_INVOCATIONS. */
export const MAX_WAVES = Math.ceil(MAX_SCENARIO_INVOCATIONS / MIN_WAVE_INVOCATIONS);
/** Actions of a wave start within this long after the wave begins. */
export const WAVE_SPREAD_MS = 30_000;
/** A wave whose actions have not all finished this long after it began has hung (a liveness violation). */
export const MAX_WAVE_SPAN_MS = 6 * 3_600_000;

/** Organizations and operations per scenario. */
export const MIN_ORGANIZATIONS = 2;
export const MAX_ORGANIZATIONS = 6;
export const MIN_OPERATIONS = 2;
export const MAX_OPERATIONS = 4;

/** Event-loop turns with no store activity before the pump calls the process idle and fires a timer. */
export const QUIET_TURNS_BEFORE_TIMER = 4;
/** Longest a store write may take in virtual time (the pump lets nearer timers fire while it is in flight). */
export const MAX_STORE_LATENCY_MS = 250;
/** Share of busy event-loop turns in which time passes (a write that takes a while), in percent. */
export const STORE_LATENCY_PERCENT = 10;
/** Grid of a wave's start times, in ms: work lands on the same instants, so requests really overlap. */
export const WAVE_GRID_MS = 250;
/** Event-loop turns the process may sit idle with no timer left and work still pending: a hang. */
export const MAX_IDLE_TURNS_WITHOUT_TIMERS = 2_000;
/**
 * Quiet turns between two questions of the pump to a server store whose subscription was short of
 * the log's head (each a round trip); a delivery is activity and ends the wait sooner.
 */
export const QUIET_TURNS_BETWEEN_HEAD_CHECKS = 1_000;
/**
 * Longest the audit reads the log again for a position its fold must pass (an event a caller was
 * handed ahead of the fold, the committed head at a quiet point), in wall-clock ms: a server store's
 * read bound waits for transactions outside the run. And the pause between two reads, in wall-clock ms.
 */
export const MAX_FOLD_WAIT_WALL_MS = 30_000;
export const FOLD_WAIT_POLL_WALL_MS = 5;
/** Event-loop turns one wave may take at most (a runaway guard; a wave normally needs a few thousand). */
export const MAX_TURNS_PER_WAVE = 5_000_000;

/** Event-loop turns a crashed process's commands get to fail before the restart gives up on them. */
export const MAX_CRASH_DRAIN_TURNS = 1_000_000;

/** Provider calls one simulated model answers at most; the loop's own bounds stop far sooner. */
export const MAX_MODEL_CALLS_PER_INVOCATION = 1_000;
/** Tool calls one simulated model turn asks for at most. */
export const MAX_CALLS_PER_MODEL_TURN = 3;

/**
 * Time the final phase lets pass with recovery alone: the longest conversation budget a scenario
 * publishes (10 minutes), the longest recovery threshold (5 minutes) and period (1 minute), almost
 * three times over. Longer only adds passes that find nothing (each a few store round trips).
 */
export const FINAL_IDLE_MS = 45 * 60_000;
/** How long each simulated process's lease lasts after a renewal, in virtual ms: the service's default. */
export const SIMULATED_LEASE_DURATION_MS = DEFAULT_LEASE_DURATION_MS;
/** Share of waves in which one process renews no lease for a while (a pause), in percent. */
export const LEASE_PAUSE_WAVE_PERCENT = 30;

/** Staleness threshold of the final sweep. */
export const FINAL_SWEEP_OLDER_THAN_MS = 60_000;
/** Sweeps the final phase runs at most before it expects nothing left to settle. */
export const MAX_FINAL_SWEEPS = 3;

/** Events of the offending streams printed with a violation at most (the JSON file holds all). */
export const MAX_PRINTED_HISTORY_EVENTS = 400;
/** Read-model differences printed with a violation at most. */
export const MAX_PRINTED_DIFFERENCES = 5;
