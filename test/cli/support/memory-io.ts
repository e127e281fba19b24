import type { CliIo } from '../../../src/cli/cli-io';

/** A CliIo that keeps what was written, with a clock that advances 100 ms per reading. */
export class MemoryIo implements CliIo {
  private out = '';
  private err = '';
  private clockMs = 0;
  readonly stdout = { write: (text: string): void => void (this.out += text) };
  readonly stderr = { write: (text: string): void => void (this.err += text) };

  constructor(readonly interactive = false) {}

  now(): number {
    this.clockMs += 100;
    return this.clockMs;
  }

  get stdoutText(): string {
    return this.out;
  }

  get stderrText(): string {
    return this.err;
  }

  /** Non-empty stdout lines. */
  get lines(): string[] {
    return this.out.split('\n').filter((line) => line.length > 0);
  }

  /** Stdout lines parsed as JSON. */
  json<T = Record<string, unknown>>(): T[] {
    return this.lines.map((line) => JSON.parse(line) as T);
  }
}
