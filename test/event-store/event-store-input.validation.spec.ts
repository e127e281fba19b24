import { randomUUID } from 'node:crypto';
import { InvalidEventStoreInputError, type NewEvent } from '../../src/event-store/event-store.port';
import { MAX_APPEND_SIZE_BYTES, validateAppend } from '../../src/event-store/event-store-input.validation';

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
