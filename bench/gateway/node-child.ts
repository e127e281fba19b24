/**
 * A Node process the gateway benchmark starts (upstream, bare proxy, Portkey, load generator), with
 * an IPC channel for its requests (child.protocol.ts, or ../http/service-probe.ts loaded with
 * --require), its output in a log file, and a bounded start and stop. Every one is killed when the
 * benchmark exits (../http/stop-on-exit.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import type { ServiceUsage } from '../http/service-probe.protocol';
import { stopOnExit } from '../http/stop-on-exit';
import type { ChildReply, ListeningNotice } from './child.protocol';

const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;
const READY_POLL_INTERVAL_MS = 100;
/** Last log lines shown when a child failed to start. */
const KEPT_OUTPUT_LINES = 30;

export interface ChildOptions {
  readonly name: string;
  /** The script and its arguments. */
  readonly args: readonly string[];
  readonly nodeFlags?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly logPath: string;
  /** Ready when it says it listens (child.protocol.ts), or when this URL answers at all. */
  readonly ready: { readonly kind: 'notice' } | { readonly kind: 'url'; readonly url: string; readonly port: number };
}

export class NodeChild {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();

  private constructor(
    private readonly child: ChildProcess,
    readonly name: string,
    readonly port: number,
    readonly logPath: string,
  ) {
    child.on('message', (reply: ChildReply) => {
      if (typeof reply.id !== 'number') return;
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.error !== undefined) waiter?.reject(new Error(`${name}: ${reply.error}`));
      else waiter?.resolve(reply.result);
    });
    child.once('exit', (code, signal) => {
      for (const waiter of this.waiting.values()) waiter.reject(new Error(`${name} exited (${signal ?? code}) before answering`));
      this.waiting.clear();
    });
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number {
    return this.child.pid!;
  }

  static async start(options: ChildOptions): Promise<NodeChild> {
    const log = openSync(options.logPath, 'w');
    const child = spawn(process.execPath, [...(options.nodeFlags ?? []), ...options.args], {
      env: { ...process.env, ...options.env },
      stdio: ['ignore', log, log, 'ipc'],
    });
    closeSync(log);
    stopOnExit(child);
    try {
      const port = await whenReady(child, options);
      return new NodeChild(child, options.name, port, options.logPath);
    } catch (error) {
      child.kill('SIGKILL');
      const output = readFileSync(options.logPath, 'utf8').split('\n').slice(-KEPT_OUTPUT_LINES).join('\n');
      throw new Error(`${options.name} did not start: ${String(error)}\n${output}`);
    }
  }

  request<T>(kind: string, fields: Readonly<Record<string, unknown>> = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        reject(new Error(`${this.name} is not running`));
        return;
      }
      this.waiting.set(id, { resolve: resolve as (result: unknown) => void, reject });
      this.child.send({ ...fields, id, kind });
    });
  }

  usage(collectGarbage = false): Promise<ServiceUsage> {
    return this.request<ServiceUsage>('usage', { collectGarbage });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }
}

function whenReady(child: ChildProcess, options: ChildOptions): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const started = performance.now();
    const failIfGone = (): boolean => {
      if (child.exitCode === null && child.signalCode === null && performance.now() - started < START_TIMEOUT_MS) return false;
      reject(new Error(child.exitCode === null && child.signalCode === null ? `not ready after ${START_TIMEOUT_MS} ms` : `exited (${child.signalCode ?? child.exitCode})`));
      return true;
    };
    const ready = options.ready;
    if (ready.kind === 'notice') {
      const watch = setInterval(() => {
        if (failIfGone()) clearInterval(watch);
      }, READY_POLL_INTERVAL_MS);
      const onNotice = (notice: ListeningNotice): void => {
        if (notice.kind !== 'listening') return;
        clearInterval(watch);
        child.off('message', onNotice);
        resolve(notice.port);
      };
      child.on('message', onNotice);
      return;
    }
    const poll = (): void => {
      fetch(ready.url, { signal: AbortSignal.timeout(1_000) }).then(
        async (response) => {
          await response.arrayBuffer();
          resolve(ready.port);
        },
        () => {
          if (!failIfGone()) setTimeout(poll, READY_POLL_INTERVAL_MS);
        },
      );
    };
    poll();
  });
}
