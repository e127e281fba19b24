/**
 * What a CLI command may touch besides its stores: two text outputs and a clock for progress rates.
 * Commands take a CliIo so tests run them in-process and read what they printed; only main.ts binds
 * it to the process.
 */

/** A text sink. A returned promise means "wait before writing more" (backpressure on a pipe). */
export interface TextWriter {
  write(text: string): void | Promise<void>;
}

export interface CliIo {
  readonly stdout: TextWriter;
  readonly stderr: TextWriter;
  /** True when stderr is a terminal: progress redraws a bar instead of printing lines. */
  readonly interactive: boolean;
  /** Milliseconds, used only to report rates. */
  now(): number;
}

/** Success; for `audit verify`, nothing differs. */
export const EXIT_OK = 0;
/** `audit verify` found a difference, or a rebuild stopped on a projection fault. */
export const EXIT_DIFFERENCES = 1;
/** Bad arguments or configuration, or nothing by the name given (an unknown stream or projection). */
export const EXIT_USAGE = 2;
/** The command could not finish: a store could not be opened or read. */
export const EXIT_FAILURE = 3;

/** A mistake in how the CLI was called: reported as its message alone, with exit code EXIT_USAGE. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Writes one line. */
export async function writeLine(writer: TextWriter, line: string): Promise<void> {
  await writer.write(`${line}\n`);
}

/** Binds a CliIo to the process's streams, waiting for 'drain' when a pipe is full. */
export function processIo(): CliIo {
  return {
    stdout: streamWriter(process.stdout),
    stderr: streamWriter(process.stderr),
    interactive: process.stderr.isTTY === true,
    now: () => performance.now(),
  };
}

function streamWriter(stream: NodeJS.WriteStream): TextWriter {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    // The reader went away (`llm-ledger streams read x | head`): stop quietly, as Unix tools do.
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? EXIT_OK);
    throw error;
  });
  return {
    write(text: string): void | Promise<void> {
      if (stream.write(text)) return;
      return new Promise((resolve) => stream.once('drain', () => resolve()));
    },
  };
}
