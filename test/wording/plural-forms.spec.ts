import { formatCountOf, formatSignedCredits, unusedKindsSentence } from '../../console/src/format';
import { timelineFromEvents, timelineFromProgress, turnsAndCalls } from '../../console/src/invocation/timeline';
import { auditSummaryLine } from '../../src/cli/audit-verify.command';
import { IllegalTransitionError } from '../../src/domain/domain.errors';
import { countOf, listInWords, nounFor } from '../../src/domain/wording';
import type { LoggedEvent } from '../../console/src/api/types';
import { bearer, startHttpLedger, type HttpLedger } from '../http/support/http-ledger';

describe('Counts and lists read as English (issue 26, finding 10)', () => {
  it('agrees the noun with its number: 1 organization, 0 and 2 organizations, irregular plurals given', () => {
    expect(countOf(1, 'organization')).toBe('1 organization');
    expect(countOf(0, 'organization')).toBe('0 organizations');
    expect(countOf(2, 'tool call')).toBe('2 tool calls');
    expect(countOf(1, 'entry', 'entries')).toBe('1 entry');
    expect(countOf(3, 'entry', 'entries')).toBe('3 entries');
    expect(nounFor(1, 'retry', 'retries')).toBe('retry');
    expect(formatCountOf(1_000_000, 'credit')).toBe('1,000,000 credits');
  });

  it('joins a list with commas and a last "and" or "or"', () => {
    expect(listInWords([])).toBe('');
    expect(listInWords(['a'])).toBe('a');
    expect(listInWords(['a', 'b'], 'or')).toBe('a or b');
    expect(listInWords(['a', 'b', 'c'])).toBe('a, b and c');
  });

  it('ends audit verify with singular nouns for a ledger of one organization, invocation and event', () => {
    expect(auditSummaryLine({ differences: 0, projections: 8, organizations: 1, invocations: 1, events: 1 })).toBe(
      'audit verify: OK — 8 projections rebuilt and compared; 1 organization, 1 invocation, 1 event audited.',
    );
    expect(auditSummaryLine({ differences: 1, projections: 1, organizations: 2, invocations: 0, events: 9 })).toBe(
      'audit verify: 1 difference — 1 projection rebuilt and compared; 2 organizations, 0 invocations, 9 events audited.',
    );
  });

  it('writes the console timeline’s counts in agreement: 2 turns and 1 tool call', () => {
    expect(turnsAndCalls(2, 1)).toBe('2 turns and 1 tool call');
    expect(turnsAndCalls(1, 0)).toBe('1 turn and 0 tool calls');
    const completed = { type: 'InvocationCompleted', revision: '5', position: '9', recordedAt: '2026-12-01T00:00:00.000Z', id: 'e', data: { outcome: 'completed', turnsUsed: 2, toolCallsUsed: 1, spentCredits: 7 }, metadata: {} };
    expect(timelineFromEvents([completed as unknown as LoggedEvent])[0]?.summary).toBe('completed after 2 turns and 1 tool call; spent 7 credits');
    const failed = { type: 'InvocationFailed', revision: 4, time: '2026-12-01T00:00:00.000Z', state: 'failed', fault: 'overloaded', turnsUsed: 1, spentCredits: 1 };
    expect(timelineFromProgress([failed as never])[0]?.summary).toBe('failed with overloaded after 1 turn; spent 1 credit');
  });

  it('names the usage no attempt used as one English list', () => {
    expect(unusedKindsSentence(['cacheWriteTokens', 'cacheWrite1hTokens', 'cacheReadTokens', 'webSearchRequests'])).toBe(
      'No attempt used any cache write tokens, cache write 1h tokens, cache read tokens or web search requests.',
    );
    expect(unusedKindsSentence(['webSearchRequests'])).toBe('No attempt used any web search requests.');
  });

  it('signs the amounts that move a balance', () => {
    expect(formatSignedCredits(1_000_000)).toBe('+1,000,000 credits');
    expect(formatSignedCredits(-7)).toBe('−7 credits');
    expect(formatSignedCredits(-1)).toBe('−1 credit');
    expect(formatSignedCredits(0)).toBe('0 credits');
  });
});

describe('A command the state does not allow says so in words, not in command names (issue 26, finding 10)', () => {
  it('words each refusal as a caller would ask', () => {
    expect(new IllegalTransitionError('settled', 'RequestCancellation').message).toBe('Cannot cancel this invocation: it is already settled.');
    expect(new IllegalTransitionError('completed', 'RequestCancellation').message).toBe(
      'Cannot cancel this invocation: its conversation has completed, and only settlement is left.',
    );
    expect(new IllegalTransitionError('estimated', 'SettleInvocation', 'only the sweep settles a request never reserved (transition 12), not runtime').message).toBe(
      'Cannot settle this invocation: it is awaiting admission — only the sweep settles a request never reserved (transition 12), not runtime.',
    );
    expect(new IllegalTransitionError('no account', 'SetAlertThresholds').message).toBe('Cannot set the alert thresholds of this organization: it has no account.');
  });

  describe('over HTTP', () => {
    let ledger: HttpLedger;
    beforeAll(async () => {
      ledger = await startHttpLedger({ env: { LEDGER_DEMO: '1' } });
    });
    afterAll(async () => ledger?.close());

    it('answers 409 to cancelling a settled invocation with that sentence', async () => {
      const member = bearer('demo-member-token');
      const run = await ledger
        .http()
        .post('/v1/invocations')
        .set(member)
        .send({ operationId: 'demo.arithmetic', organizationId: 'demo-org', input: { question: 'What is 6*7?' } })
        .expect(200);
      expect(run.body.state).toBe('settled');
      const cancel = await ledger.http().post(`/v1/invocations/${run.body.invocationId}/cancel`).set(member).expect(409);
      expect(cancel.body).toMatchObject({ statusCode: 409, message: 'Cannot cancel this invocation: it is already settled.' });
    });
  });
});
