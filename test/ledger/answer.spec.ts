import Database from 'better-sqlite3';
import { join } from 'node:path';
import { ANSWER_STORE, MAX_ANSWER_RETENTION_MS } from '../../src/answer-store/answer-store.port';
import { SqliteAnswerStore } from '../../src/answer-store/sqlite-answer-store';
import { FeatureRegistry } from '../../src/features/feature.registry';
import type { OperationFeature } from '../../src/features/operation-feature';
import type { InvocationResult } from '../../src/invocations/invocation-result';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { ScriptedProvider, scriptedText, scriptedToolUse, systemClock, type Clock, type ScriptedStep } from '../../src/runtime';
import { publication, seed, startLedgerApp, type LedgerTestApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

const RETENTION_MS = 60_000;
const START_MS = Date.parse('2026-03-01T09:00:00.000Z');
const ANSWER = { value: 42, note: 'the answer value 7f3c' };

const submitted = () => scriptedToolUse([{ id: 'a', name: 'submit_answer', input: ANSWER }], { usage: usage(100, 10) });
const submits = (): ScriptedStep[] => [submitted()];
const keeping = (operationId: string, script: () => Iterable<ScriptedStep>): OperationFeature => ({
  ...scriptedFeature(operationId, script),
  answerRetentionMs: RETENTION_MS,
});

/** A feature with no answer tool: its accepted final text is the answer. */
const textFeature: OperationFeature = {
  operationId: 'test.text',
  prepare: () => ({ system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'Say it.' }] }], tools: [] }),
  scriptedModel: () => new ScriptedProvider([scriptedText('forty-two', { usage: usage(10, 2) })]),
};

/** Time stands still until the test moves it; timers (attempt timeouts) are the system's and never fire here. */
class ManualClock implements Clock {
  constructor(private nowMs: number) {}
  now(): number {
    return this.nowMs;
  }
  advance(ms: number): void {
    this.nowMs += ms;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }
  setTimer(ms: number, onFire: () => void): () => void {
    return systemClock.setTimer(ms, onFire);
  }
}

let release!: () => void;
let reached!: () => void;
let gate: Promise<void>;
let conversing: Promise<void>;
// Keeps no answers: only joining the run in progress can give a repeat the answer.
const gated = scriptedFeature('test.gated', () => [
  async () => {
    reached();
    await gate;
    return submitted();
  },
]);

describe('README.md "The answer": the result of a completed invocation carries its accepted answer, never the log', () => {
  let ledger: LedgerTestApp;
  let clock: ManualClock;

  beforeEach(async () => {
    gate = new Promise((resolve) => (release = resolve));
    conversing = new Promise((resolve) => (reached = resolve));
    clock = new ManualClock(START_MS);
    ledger = await startLedgerApp({
      clock,
      features: [scriptedFeature('test.forgetful', submits), keeping('test.keeping', submits), textFeature, gated, scriptedFeature('test.silent', () => [])],
    });
    for (const operationId of ['test.forgetful', 'test.keeping', 'test.text', 'test.gated', 'test.silent']) {
      await seed(ledger, { operationId, organizationId: 'acme', credits: 0, publication: publication() });
    }
    await seed(ledger, { operationId: 'test.forgetful', organizationId: 'acme' });
  });

  afterEach(() => ledger.close());

  const run = (operationId: string, idempotencyKey?: string): Promise<InvocationResult> =>
    ledger.commandBus.execute(new RunOperationCommand({ operationId, organizationId: 'acme', input: {}, ...(idempotencyKey ? { idempotencyKey } : {}) }));

  it('returns the answer tool’s input for a completed invocation', async () => {
    const result = await run('test.forgetful');
    expect(result).toMatchObject({ state: 'settled', outcome: 'completed', answer: ANSWER });
    expect(result.answerUnavailable).toBeUndefined();
  });

  it('returns the accepted final text when the feature designates no answer tool', async () => {
    expect(await run('test.text')).toMatchObject({ outcome: 'completed', answer: 'forty-two' });
  });

  it('carries no answer for an outcome other than completed', async () => {
    const result = await run('test.silent');
    expect(result.outcome).not.toBe('completed');
    expect(result).not.toHaveProperty('answer');
    expect(result).not.toHaveProperty('answerUnavailable');
  });

  it('gives a keyed repeat that joins the run still in progress the same answer', async () => {
    const first = run('test.gated', 'join-1');
    await conversing;
    const joined = run('test.gated', 'join-1');
    release();
    const [a, b] = await Promise.all([first, joined]);
    expect(a.answer).toEqual(ANSWER);
    expect(b).toEqual(a);
  });

  it('tells a keyed repeat after settlement that the answer is no longer available when the feature keeps none', async () => {
    const first = await run('test.forgetful', 'late-1');
    const repeat = await run('test.forgetful', 'late-1');
    expect(repeat).toEqual({ ...withoutAnswer(first), answerUnavailable: 'not_retained' });
  });

  it('gives a keyed repeat after settlement the answer within the feature’s retention period, and not after it', async () => {
    const first = await run('test.keeping', 'kept-1');
    clock.advance(RETENTION_MS - 1);
    expect(await run('test.keeping', 'kept-1')).toEqual(first);
    clock.advance(1);
    expect(await run('test.keeping', 'kept-1')).toEqual({ ...withoutAnswer(first), answerUnavailable: 'expired' });
  });

  it('keeps answers outside the log, in a file beside it whose expired entries are deleted', async () => {
    const first = await run('test.keeping', 'kept-2');
    const answersFile = join(ledger.directory, 'ledger.answers.sqlite');
    const kept = () => {
      (ledger.app.get(ANSWER_STORE) as SqliteAnswerStore).writeQueued();
      const db = new Database(answersFile, { readonly: true });
      try {
        return db.prepare('SELECT invocation_id AS id, answer FROM answers').all() as { id: string; answer: string }[];
      } finally {
        db.close();
      }
    };
    expect(kept()).toEqual([{ id: first.invocationId, answer: JSON.stringify(ANSWER) }]);
    const log = JSON.stringify((await ledger.store.readAll()).map((event) => [event.data, event.metadata]));
    expect(log).not.toContain(ANSWER.note);

    clock.advance(RETENTION_MS);
    // The next answer kept purges the expired one.
    const second = await run('test.keeping', 'kept-3');
    expect(kept()).toEqual([{ id: second.invocationId, answer: JSON.stringify(ANSWER) }]);
  });

  it('refuses a feature whose retention period is not a whole number of ms up to MAX_ANSWER_RETENTION_MS', () => {
    const registry = ledger.app.get(FeatureRegistry);
    for (const answerRetentionMs of [0, -1, 1.5, MAX_ANSWER_RETENTION_MS + 1]) {
      expect(() => registry.register({ ...scriptedFeature('test.bad-retention', submits), answerRetentionMs })).toThrow(/answerRetentionMs/);
    }
  });
});

function withoutAnswer(result: InvocationResult): Omit<InvocationResult, 'answer'> {
  const { answer: _answer, ...rest } = result;
  return rest;
}
