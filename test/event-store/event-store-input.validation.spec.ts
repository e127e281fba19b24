import { randomUUID } from 'node:crypto';
import { InvalidEventStoreInputError, type NewEvent } from '../../src/event-store/event-store.port';
import { MAX_APPEND_SIZE_BYTES, validateAppend, validateAppendTogether } from '../../src/event-store/event-store-input.validation';

/** One event of `text`, and the bytes its append counts: UTF-8 data and metadata plus twice its type's length. */
function eventOf(text: string): { event: NewEvent; bytes: number } {
  const event: NewEvent = { id: randomUUID(), type: 'Sized', data: { text }, metadata: { schemaVersion: 1 } };
  const bytes = Buffer.byteLength(JSON.stringify(event.data)) + Buffer.byteLength(JSON.stringify(event.metadata)) + 2 * event.type.length;
  return { event, bytes };
}

/** Events of `character` whose append counts exactly `bytes` in all, split over `count` events. */
function eventsOfSize(bytes: number, character: string, count: number): NewEvent[] {
  const overhead = eventOf('').bytes;
  const perEvent = Math.floor(bytes / count);
  return Array.from({ length: count }, (_, index) => {
    const target = (index === count - 1 ? bytes - perEvent * (count - 1) : perEvent) - overhead;
    const characters = Math.floor(target / Buffer.byteLength(character));
    const { event, bytes: actual } = eventOf(character.repeat(characters) + 'a'.repeat(target - characters * Buffer.byteLength(character)));
    expect(actual).toBe(target + overhead);
    return event;
  });
}

function refusal(events: NewEvent[]): unknown {
  try {
    validateAppend('sized', events, { expectedRevision: 'any' });
    return undefined;
  } catch (error) {
    return error;
  }
}

describe('validateAppend — the append size as KurrentDB counts it (MAX_APPEND_SIZE_BYTES)', () => {
  it('accepts ASCII appends up to the bound, counted exactly once the UTF-16 length alone cannot clear them', () => {
    // Past a third of the bound the quick upper estimate (3 bytes per UTF-16 unit) no longer clears it.
    for (const bytes of [Math.ceil(MAX_APPEND_SIZE_BYTES / 3) + 10, MAX_APPEND_SIZE_BYTES]) {
      expect(refusal(eventsOfSize(bytes, 'a', 1))).toBeUndefined();
      expect(refusal(eventsOfSize(bytes, 'a', 4))).toBeUndefined();
    }
  });

  it('refuses one byte over the bound, summed over the events, naming the bytes it counted', () => {
    for (const [character, count] of [['a', 1], ['a', 3], ['€', 1], ['€', 2], ['😀', 2]] as const) {
      const events = eventsOfSize(MAX_APPEND_SIZE_BYTES + 1, character, count);
      const error = refusal(events);
      expect(error).toBeInstanceOf(InvalidEventStoreInputError);
      expect(error).toMatchObject({ field: 'events', message: expect.stringContaining(`take ${MAX_APPEND_SIZE_BYTES + 1} bytes`) });
      expect(refusal(eventsOfSize(MAX_APPEND_SIZE_BYTES, character, count))).toBeUndefined();
    }
  });
});

describe('validateAppend and validateAppendTogether — how an append is acknowledged', () => {
  const events = (): NewEvent[] => [{ id: randomUUID(), type: 'Checked', data: {}, metadata: { schemaVersion: 1 } }];

  it.each(['durableAtOnce', 'durableOffLoop'] as const)('names options.%s when it is not a boolean, on one append and on an append across streams', (option) => {
    const alone = (): unknown => validateAppend('checked', events(), { expectedRevision: 'any', [option]: 'yes' as unknown as boolean });
    const together = (): unknown => validateAppendTogether([{ streamName: 'checked', events: events(), expectedRevision: 'any' }], { [option]: 1 as unknown as boolean });
    for (const check of [alone, together]) {
      expect(check).toThrow(InvalidEventStoreInputError);
      expect(check).toThrow(expect.objectContaining({ field: `options.${option}` }));
    }
    expect(() => validateAppend('checked', events(), { expectedRevision: 'any', [option]: true })).not.toThrow();
    expect(() => validateAppendTogether([{ streamName: 'checked', events: events(), expectedRevision: 'any' }], { [option]: true })).not.toThrow();
  });

  it('names options.acknowledge and options.onCommitted the same way on both', () => {
    const bad = { acknowledge: 'soon', onCommitted: 'later' };
    expect(() => validateAppend('checked', events(), { expectedRevision: 'any', acknowledge: bad.acknowledge as 'durable' })).toThrow(expect.objectContaining({ field: 'options.acknowledge' }));
    expect(() => validateAppendTogether([{ streamName: 'checked', events: events(), expectedRevision: 'any' }], { acknowledge: bad.acknowledge as 'durable' })).toThrow(
      expect.objectContaining({ field: 'options.acknowledge' }),
    );
    expect(() => validateAppendTogether([{ streamName: 'checked', events: events(), expectedRevision: 'any' }], { onCommitted: bad.onCommitted as unknown as () => void })).toThrow(
      expect.objectContaining({ field: 'options.onCommitted' }),
    );
  });

  it('names a part\'s id that repeats one of an earlier part by its part, and says where it was first used', () => {
    const shared = events();
    const check = (): unknown =>
      validateAppendTogether(
        [
          { streamName: 'first', events: shared, expectedRevision: 'any' },
          { streamName: 'second', events: [...events(), shared[0]!], expectedRevision: 'any' },
        ],
        {},
      );
    expect(check).toThrow(expect.objectContaining({ field: 'parts[1].events[1].id', message: expect.stringContaining('at parts[0].events[0]') }));
  });
});
