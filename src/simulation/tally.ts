/** Named counters: what a run injected and what the ledger did with it. */
export class Tally {
  private readonly counts = new Map<string, number>();

  add(name: string, by = 1): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + by);
  }

  get(name: string): number {
    return this.counts.get(name) ?? 0;
  }

  /** Sum of every counter whose name starts with `prefix`. */
  total(prefix: string): number {
    let sum = 0;
    for (const [name, count] of this.counts) if (name.startsWith(prefix)) sum += count;
    return sum;
  }

  merge(other: Tally): void {
    for (const [name, count] of other.entries()) this.add(name, count);
  }

  /** Counters in name order. */
  entries(): [string, number][] {
    return [...this.counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  toJSON(): Record<string, number> {
    return Object.fromEntries(this.entries());
  }
}
