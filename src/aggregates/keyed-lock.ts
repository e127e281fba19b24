/**
 * Serialises async work per key inside this process. Commands on one stream queue behind each other
 * instead of racing to a ConcurrencyError; optimistic concurrency still guards against other processes.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const current = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => current);
    this.tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      release();
      // Forget the key once nobody queues behind us, so the map stays bounded by keys in use.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys with work running or queued. */
  get size(): number {
    return this.tails.size;
  }
}
