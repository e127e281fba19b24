import { INVOCATION_LISTINGS, invocationListProjection, listingKey, type InvocationListEntry } from '../../projections';
import { attempt, completed, dispatched, estimated, EventLog, figures, publicationV, reserved, settled } from './support/invocation-log';
import { project } from './support/in-memory-read-model';

describe('docs/http.md the invocation list keeps each invocation at one place in every listing, so cursors stay valid', () => {
  const log = new EventLog()
    .invocation('inv-1', estimated(publicationV(1), { invocationId: 'inv-1', operationId: 'op.a' }), reserved(), dispatched())
    .invocation('inv-2', estimated(publicationV(1), { invocationId: 'inv-2', operationId: 'op.b' }));

  it('keys an entry by its estimate time and position only, so a later transition moves it between state listings, never within the order', () => {
    const before = project(invocationListProjection, log.events);
    const { estimatedAt } = log.events[0]!.data as { estimatedAt: string };
    const key = listingKey(Date.parse(estimatedAt), log.events[0]!.position, 'inv-1');
    expect(before.ids(INVOCATION_LISTINGS.all)).toContain(key);
    expect(before.indexKeyOf(INVOCATION_LISTINGS.state, key)).toBe('acme\n\ndispatched');

    log.invocation('inv-1', attempt(1, 0, { priceCredits: 7 }), completed('completed', figures({ spentCredits: 7 })), settled(8, 7));
    const after = project(invocationListProjection, log.events);
    expect(after.ids(INVOCATION_LISTINGS.all)).toEqual(before.ids(INVOCATION_LISTINGS.all));
    expect(after.indexKeyOf(INVOCATION_LISTINGS.state, key)).toBe('acme\n\nsettled');
    expect(after.indexKeyOf(INVOCATION_LISTINGS.operationState, key)).toBe('acme\nop.a\nsettled');
    expect(after.get<InvocationListEntry>(INVOCATION_LISTINGS.all, key)).toMatchObject({ state: 'settled', charge: 7, outcome: 'completed' });
  });

  it('orders two invocations estimated in the same millisecond by their place in the log, newest first', () => {
    const ids = project(invocationListProjection, log.events).ids(INVOCATION_LISTINGS.all);
    expect(ids.map((id) => id.split(':').at(-1))).toEqual(['inv-2', 'inv-1']);
  });
});
