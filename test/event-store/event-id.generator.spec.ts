import { newEventId } from '../../src/event-store/event-id.generator';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('time-ordered event ids (UUIDv7)', () => {
  it('are version-7 UUIDs carrying the millisecond they were made in', () => {
    const id = newEventId(Date.UTC(2026, 0, 2, 3, 4, 5, 678));

    expect(id).toMatch(UUID_V7);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBeGreaterThanOrEqual(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
  });

  it('sort in the order they were made, even many within one millisecond and when the clock steps back, so the id index only grows at its end', () => {
    const now = Date.UTC(2030, 5, 1);
    const ids = [
      ...Array.from({ length: 5_000 }, () => newEventId(now)),
      ...Array.from({ length: 10 }, () => newEventId(now - 1_000)),
      ...Array.from({ length: 10 }, () => newEventId(now + 1)),
    ];

    expect(ids.every((id) => UUID_V7.test(id))).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
