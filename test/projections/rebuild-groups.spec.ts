import { rmSync } from 'node:fs';
import {
  ALL_PROJECTIONS,
  ATTEMPTS_PROJECTION,
  BALANCES_PROJECTION,
  EXPLANATIONS_PROJECTION,
  INVOCATION_LIST_PROJECTION,
  INVOCATIONS_PROJECTION,
  LEDGER_ENTRIES_PROJECTION,
  ROUTING_BUDGETS_PROJECTION,
  USAGE_STATEMENTS_PROJECTION,
} from '../../projections';
import { countSqliteEventTypes } from '../../src/event-store/sqlite/sqlite-event-store';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { REBUILD_WEIGHT_SAMPLE_EVENTS, rebuildGroups } from '../../src/projection-runner';
import { scriptedToolUse } from '../../src/runtime';
import { publication, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

/**
 * The split `projections rebuild` used before the groups were derived, for the five projections whose
 * worker thread's CPU time was measured alone over the read-side bench's 1,000,000 events (explanations
 * 7.0 s, attempts 5.4 s, invocations 5.3 s, balances 2.9 s, routing budgets 2.2 s).
 */
const MEASURED_GROUPS = [
  [INVOCATIONS_PROJECTION, ATTEMPTS_PROJECTION],
  [BALANCES_PROJECTION, EXPLANATIONS_PROJECTION, ROUTING_BUDGETS_PROJECTION],
];
const INVOCATIONS = 12;

/** Groups as sets: the order of the groups, and within one, is not what is derived. */
const asSets = (groups: readonly (readonly string[])[]): string[][] => groups.map((group) => [...group].sort()).sort((a, b) => a[0]!.localeCompare(b[0]!));

describe('rebuildGroups: the groups of `projections rebuild` derived from the events each projection applies (issue 25)', () => {
  let logPath: string;
  let directory: string;

  beforeAll(async () => {
    // The read-side bench's shape: conversations of 3 turns, 2 tool calls and the answer.
    const ledger = await startLedgerApp({
      keepDirectory: true,
      features: [
        scriptedFeature('test.three-turns', () => [
          scriptedToolUse([{ id: 't1', name: 'lookup', input: { q: 'a' } }], { usage: usage(1_000, 50) }),
          scriptedToolUse([{ id: 't2', name: 'lookup', input: { q: 'b' } }], { usage: usage(1_100, 50) }),
          scriptedToolUse([{ id: 't3', name: 'submit_answer', input: { value: 42 } }], { usage: usage(1_200, 50) }),
        ]),
      ],
    });
    ({ logPath, directory } = ledger);
    try {
      // Prices low enough that the credit hold never ends a conversation early.
      const prices = { inputPerMTok: 1_000, outputPerMTok: 10_000, cacheWritePerMTok: 0, cacheReadPerMTok: 0 };
      await seed(ledger, { operationId: 'test.three-turns', organizationId: 'acme', publication: publication({ prices }) });
      for (let index = 0; index < INVOCATIONS; index += 1) {
        await ledger.commandBus.execute(new RunOperationCommand({ operationId: 'test.three-turns', organizationId: 'acme', input: { question: 'q' } }));
      }
    } finally {
      await ledger.close();
    }
  });

  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('splits the five projections measured alone exactly as their CPU time did: invocations + attempts | balances + explanations + routing budgets', () => {
    const measured = new Set(MEASURED_GROUPS.flat());
    const projections = ALL_PROJECTIONS.filter((projection) => measured.has(projection.name));
    expect(projections).toHaveLength(measured.size);
    // As in the bench's log: each invocation recorded three attempts and settled; the instance took its lease.
    expect(countSqliteEventTypes(logPath, REBUILD_WEIGHT_SAMPLE_EVENTS)).toEqual(
      new Map([
        ['InstanceLeaseTaken', 1],
        ['OperationPublished', 1],
        ['CreditsGranted', 1],
        ...['InvocationEstimated', 'HoldPlaced', 'InvocationReserved', 'InvocationDispatched', 'InvocationCompleted', 'InvocationSettled', 'HoldSettled'].map(
          (type): [string, number] => [type, INVOCATIONS],
        ),
        ['AttemptRecorded', 3 * INVOCATIONS],
      ]),
    );
    expect(asSets(rebuildGroups({ logPath, projections, workers: 2 }))).toEqual(asSets(MEASURED_GROUPS));
  });

  it("splits all the service's projections into groups that apply about as many events each", () => {
    const groups = rebuildGroups({ logPath, projections: ALL_PROJECTIONS, workers: 2 });
    expect(asSets(groups)).toEqual(
      asSets([
        [EXPLANATIONS_PROJECTION, ATTEMPTS_PROJECTION, USAGE_STATEMENTS_PROJECTION, LEDGER_ENTRIES_PROJECTION],
        [INVOCATIONS_PROJECTION, INVOCATION_LIST_PROJECTION, BALANCES_PROJECTION, ROUTING_BUDGETS_PROJECTION],
      ]),
    );
    const eventsByType = countSqliteEventTypes(logPath, REBUILD_WEIGHT_SAMPLE_EVENTS);
    const applied = groups.map((group) =>
      group.reduce((events, name) => {
        const projection = ALL_PROJECTIONS.find((candidate) => candidate.name === name)!;
        return events + projection.handles.reduce((sum, type) => sum + (eventsByType.get(type) ?? 0), 0);
      }, 0),
    );
    // Each invocation here is 8 events of its stream and a hold placed and settled: 37 applied in all.
    expect(Math.max(...applied) - Math.min(...applied)).toBeLessThanOrEqual(INVOCATIONS);
  });

  it('makes one group per worker, never more than there are projections', () => {
    expect(rebuildGroups({ logPath, projections: ALL_PROJECTIONS, workers: 3 })).toHaveLength(3);
    expect(rebuildGroups({ logPath, projections: ALL_PROJECTIONS.slice(0, 2), workers: 8 })).toHaveLength(2);
    expect(rebuildGroups({ logPath, projections: ALL_PROJECTIONS, workers: 1 })).toEqual([ALL_PROJECTIONS.map(({ name }) => name)]);
  });
});
