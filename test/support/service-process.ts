/**
 * The real service as its own process (`node -r tools/ts-require-hook.js src/main.ts`, the sources
 * compiled on load) on a directory's SQLite files, for tests that kill it with SIGKILL and start it
 * again on the same files.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const HOOK = join(ROOT, 'tools', 'ts-require-hook.js');
const MAIN = join(ROOT, 'src', 'main.ts');
const LISTENING = /listening on (?:\S+ )?port (\d+)/;
/** A start from the TypeScript sources on two shared cores, compiled on load. */
export const SERVICE_START_TIMEOUT_MS = 90_000;
/** How much of the service's output a failure to start quotes, in characters. */
const QUOTED_OUTPUT_CHARS = 4_000;

export interface ServiceProcess {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** Everything the service wrote to stdout and stderr so far. */
  output(): string;
}

/**
 * Starts the service on `directory`'s store (`ledger.sqlite`) on a port the OS picks, with the
 * projections on the main thread and `env` beside the PATH; resolves once it listens (once the line
 * `listening` matches says so, its first group the port: with LEDGER_WORKERS, the primary's line).
 */
export async function startServiceProcess(
  directory: string,
  env: Readonly<Record<string, string>>,
  { listening = LISTENING, timeoutMs = SERVICE_START_TIMEOUT_MS }: { readonly listening?: RegExp; readonly timeoutMs?: number } = {},
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['-r', HOOK, MAIN], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      LEDGER_STORE: `sqlite:${join(directory, 'ledger.sqlite')}`,
      LEDGER_PROJECTIONS_THREAD: 'main',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the service did not listen within ${timeoutMs} ms:\n${output.slice(-QUOTED_OUTPUT_CHARS)}`));
    }, timeoutMs);
    const read = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = listening.exec(output);
      if (match === null) return;
      clearTimeout(timer);
      resolve(Number(match[1]));
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code ?? signal}) before listening:\n${output.slice(-QUOTED_OUTPUT_CHARS)}`));
    });
  });
  return { child, baseUrl: `http://127.0.0.1:${port}`, output: () => output };
}

/** True while the process has neither exited nor been killed. */
export function running(service: ServiceProcess): boolean {
  return service.child.exitCode === null && service.child.signalCode === null;
}
