/**
 * The service in its own process, started as `npm start` starts it (`LEDGER_DEMO=1 node
 * dist/src/main.js`, the embedded store, the demo feature on its scripted model) plus the benchmark's
 * probe (service-probe.ts), on a free port and a scratch store.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProbeReply, ProbeRequest, ServiceUsage } from './service-probe.protocol';

/** How long the service may take to build its module graph, seed the demo and listen, in milliseconds. */
const SERVICE_START_TIMEOUT_MS = 60_000;
/** How long SIGTERM may take to close the service before it is killed, in milliseconds. */
const SERVICE_STOP_TIMEOUT_MS = 15_000;
/** Last output lines kept, to show why a service that failed to start failed. */
const KEPT_OUTPUT_LINES = 40;
const LISTENING = /listening on (?:\S+ )?port (\d+)/;

type ProbeRequestBody = ProbeRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

export interface ServiceOptions {
  /** Extra environment (LEDGER_TOKENS, …); PORT, LEDGER_STORE and LEDGER_DEMO are set here. */
  readonly env?: Readonly<Record<string, string>>;
  /** Extra node flags, e.g. `--expose-gc` for the soak. */
  readonly nodeFlags?: readonly string[];
}

export class ServiceProcess {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (result: ProbeReply['result']) => void; reject: (error: Error) => void }>();

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    private readonly directory: string,
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

  static async start(options: ServiceOptions = {}): Promise<ServiceProcess> {
    const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-http-bench-'));
    const distRoot = join(__dirname, '..', '..');
    const child = spawn(
      process.execPath,
      [...(options.nodeFlags ?? []), '--require', join(__dirname, 'service-probe.js'), join(distRoot, 'src', 'main.js')],
      {
        env: { ...process.env, ...options.env, PORT: '0', LEDGER_DEMO: '1', LEDGER_STORE: `sqlite:${join(directory, 'ledger.sqlite')}` },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      },
    );
    const output: string[] = [];
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => fail(`did not listen within ${SERVICE_START_TIMEOUT_MS} ms`), SERVICE_START_TIMEOUT_MS);
      const fail = (why: string): void => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(`the service ${why}:\n${output.join('\n')}`));
      };
      let pending = '';
      const onData = (chunk: Buffer): void => {
        pending += chunk.toString('utf8');
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          if (output.length < KEPT_OUTPUT_LINES) output.push(line);
          const match = LISTENING.exec(line);
          if (match !== null) {
            clearTimeout(timer);
            // From here on the request log lines are read and dropped: a full pipe would block the service.
            for (const stream of [child.stdout!, child.stderr!]) stream.off('data', onData).resume();
            resolve(Number(match[1]));
            return;
          }
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code, signal) => fail(`exited (${code ?? signal}) before listening`));
    });
    child.removeAllListeners('exit');
    return new ServiceProcess(child, port, directory);
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
