import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_LOG_BACKLOG_BYTES, nonBlockingDestination } from '../../src/logging/service-logging.module';

describe('the service log destination', () => {
  let directory: string;
  beforeEach(() => (directory = mkdtempSync(join(tmpdir(), 'llm-ledger-log-'))));
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  const writeAll = async (maxBacklogBytes: number, lines: readonly string[]): Promise<string[]> => {
    const path = join(directory, 'service.log');
    const destination = nonBlockingDestination(path, maxBacklogBytes) as ReturnType<typeof nonBlockingDestination> & {
      end(): void;
      once(event: string, listener: () => void): void;
    };
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      // All in one tick: nothing can be written before the last line is handed over.
      for (const line of lines) destination.write(`${line}\n`);
      await new Promise<void>((resolve) => {
        destination.once('close', resolve);
        destination.end();
      });
    } finally {
      stderr.mockRestore();
    }
    return readFileSync(path, 'utf8').split('\n').filter(Boolean);
  };

  it('keeps every line when the backlog stays under its bound', async () => {
    const lines = Array.from({ length: 50 }, (_, index) => `{"line":${index}}`);
    expect(await writeAll(MAX_LOG_BACKLOG_BYTES, lines)).toEqual(lines);
  });

  it('bounds what waits to be written: past the bound whole lines are dropped, the ones kept are intact and in order', async () => {
    const lines = Array.from({ length: 100 }, (_, index) => `{"line":${index},"pad":"${'x'.repeat(80)}"}`);
    const written = await writeAll(2_000, lines);
    expect(written.length).toBeGreaterThan(0);
    expect(written.length).toBeLessThan(lines.length);
    expect(written).toEqual(lines.slice(0, written.length));
  });
});
