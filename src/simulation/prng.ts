/**
 * The simulator's only source of chance: a small seeded generator (sfc32, 128 bits of state) and named
 * sub-streams. Every decision of a scenario draws from one of these, never from Math.random or a clock,
 * so a seed replays the same scenario. A sub-stream is derived from (seed, label) alone, so what one
 * invocation draws never shifts what another one draws.
 */

/** 32-bit FNV-1a over the label's UTF-16 units, then mixed with the seed. */
function hashLabel(seed: number, label: string): number {
  let hash = 0x811c9dc5 ^ (seed >>> 0);
  for (let index = 0; index < label.length; index++) {
    hash ^= label.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return mix32(hash);
}

/** A 32-bit finaliser (murmur3's): spreads nearby inputs over the whole range. */
function mix32(value: number): number {
  let x = value >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** Draws warmed up after seeding, so similar seeds do not start with similar outputs. */
const WARM_UP_DRAWS = 12;

export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** `seed` is any integer; `label` names the sub-stream (empty for the root). */
  constructor(
    readonly seed: number,
    readonly label = '',
  ) {
    this.a = hashLabel(seed, `a:${label}`);
    this.b = hashLabel(seed, `b:${label}`);
    this.c = hashLabel(seed, `c:${label}`);
    this.d = 1;
    for (let index = 0; index < WARM_UP_DRAWS; index++) this.nextUint32();
  }

  /** An independent stream for `label` under the same seed. */
  fork(label: string): Prng {
    return new Prng(this.seed, this.label.length === 0 ? label : `${this.label}/${label}`);
  }

  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** A float in [0, 1), like Math.random. */
  next(): number {
    return this.nextUint32() / 4_294_967_296;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max < min) {
      throw new RangeError(`Prng.int needs integers min <= max, got ${min}, ${max}`);
    }
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `percent` / 100. */
  chance(percent: number): boolean {
    return this.next() * 100 < percent;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('Prng.pick needs at least one item');
    return items[this.int(0, items.length - 1)]!;
  }

  /** Picks a key with probability proportional to its (non-negative integer) weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
    if (total <= 0) throw new RangeError('Prng.weighted needs a positive total weight');
    let draw = this.int(0, total - 1);
    for (const [key, weight] of entries) {
      if (draw < weight) return key;
      draw -= weight;
    }
    return entries[entries.length - 1]![0];
  }
}
