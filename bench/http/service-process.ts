/**
 * The service in its own process, started as `npm start` starts it (`LEDGER_DEMO=1 node
 * dist/src/main.js`, the embedded store, the demo feature on its scripted model) plus the benchmark's
 * probe (service-probe.ts), on a free port and a scratch store.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProbeReply, ProbeRequest, ServiceUsage } from './service-probe.protocol';
import { removeOnExit, stopOnExit } from './stop-on-exit';

/** How long the service may take to build its module graph, seed the demo and listen, in milliseconds. */
export const SERVICE_START_TIMEOUT_MS = 60_000;
/** How long SIGTERM may take to close the service before it is killed, in milliseconds. */
const SERVICE_STOP_TIMEOUT_MS = 15_000;
/** How often the log is read for the listening line while the service starts, in milliseconds. */
const START_POLL_INTERVAL_MS = 100;
/** Last log lines shown when the service failed to start. */
const KEPT_OUTPUT_LINES = 40;
const LISTENING = /listening on (?:\S+ )?port (\d+)/;

type ProbeRequestBody = ProbeRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

export interface ServiceOptions {
  /** Extra environment (LEDGER_TOKENS, …); PORT, LEDGER_STORE and LEDGER_DEMO are set here. */
  readonly env?: Readonly<Record<string, string>>;
  /** Seed the demo (LEDGER_DEMO=1), as `npm start` does; default true. */
  readonly demo?: boolean;
  /** Extra node flags, e.g. `--expose-gc` for the soak. */
  readonly nodeFlags?: readonly string[];
  /** LEDGER_STORE; default an SQLite file in the service's directory, where its read models and answers go either way. */
  readonly store?: string;
  /** The log line that says it listens, its first group the port (default: the service's own; with LEDGER_WORKERS, the primary's). */
  readonly listening?: RegExp;
  /** How long it may take to listen, in ms (default SERVICE_START_TIMEOUT_MS; several workers start in turn). */
  readonly startTimeoutMs?: number;
  /** The build to run: a `dist` directory with `src/main.js` (default this benchmark's own build). */
  readonly distRoot?: string;
}

export class ServiceProcess {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (result: ProbeReply['result']) => void; reject: (error: Error) => void }>();

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    private readonly directory: string,
    /** The service's log (stdout and stderr), removed by stop(). */
    readonly logPath: string,
  ) {
    child.on('message', (reply: ProbeReply) => {
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.error !== undefined) waiter?.reject(new Error(reply.error));
      else waiter?.resolve(reply.result);
    });
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The size of a file in the service's directory (its default SQLite log is `ledger.sqlite`), 0 when there is none. */
  fileBytes(name: string): number {
    return statSync(join(this.directory, name), { throwIfNoEntry: false })?.size ?? 0;
  }

  static async start(options: ServiceOptions = {}): Promise<ServiceProcess> {
    const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-http-bench-'));
    removeOnExit(directory);
    const distRoot = options.distRoot ?? join(__dirname, '..', '..');
    // The service's log goes to a file, as to a log collector: a pipe drained by this busy process
    // would fill and make the service buffer (or block on) its own log lines.
    const logPath = join(directory, 'service.log');
    const log = openSync(logPath, 'w');
    const child = spawn(
      process.execPath,
      [...(options.nodeFlags ?? []), '--require', join(__dirname, 'service-probe.js'), join(distRoot, 'src', 'main.js')],
      {
        env: {
          ...process.env,
          ...options.env,
          PORT: '0',
          LEDGER_DEMO: options.demo === false ? '0' : '1',
          LEDGER_STORE: options.store ?? `sqlite:${join(directory, 'ledger.sqlite')}`,
          // Beside an SQLite log they default to its directory; beside a server's log, name them.
          ...(options.store === undefined ? {} : { LEDGER_READ_STORE: join(directory, 'ledger.read.sqlite'), LEDGER_ANSWER_STORE: join(directory, 'ledger.answers.sqlite') }),
        },
        stdio: ['ignore', log, log, 'ipc'],
      },
    );
    closeSync(log);
    stopOnExit(child);
    const port = await new Promise<number>((resolve, reject) => {
      const started = performance.now();
      const poll = setInterval(() => {
        const output = readFileSync(logPath, 'utf8');
        const match = (options.listening ?? LISTENING).exec(output);
        if (match !== null) {
          clearInterval(poll);
          resolve(Number(match[1]));
        } else if (child.exitCode !== null || child.signalCode !== null || performance.now() - started > (options.startTimeoutMs ?? SERVICE_START_TIMEOUT_MS)) {
          clearInterval(poll);
          child.kill('SIGKILL');
          reject(new Error(`the service did not start listening (${child.signalCode ?? child.exitCode ?? 'timed out'}):\n${output.split('\n').slice(-KEPT_OUTPUT_LINES).join('\n')}`));
        }
      }, START_POLL_INTERVAL_MS);
    });
    return new ServiceProcess(child, port, directory, logPath);
  }

  request(body: ProbeRequestBody): Promise<ProbeReply['result']> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ ...body, id });
    });
  }

  async usage(collectGarbage = false): Promise<ServiceUsage> {
    return (await this.request({ kind: 'usage', collectGarbage })) as ServiceUsage;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), SERVICE_STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.directory, { recursive: true, force: true });
  }
}
