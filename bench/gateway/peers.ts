/**
 * Everything one gateway benchmark run starts, in front of one upstream: the upstream, the peers
 * (the upstream called directly, the bare proxy, Portkey, llm-ledger) and the load generator, each in
 * its own process, with what a call to each peer looks like. A peer that cannot be had (Portkey not
 * installable, llm-ledger's gateway not there yet) is kept with the reason, so the others still run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceUsage } from '../http/service-probe.protocol';
import type { ServiceProcess } from '../http/service-process';
import { keepOnExit, removeOnExit } from '../http/stop-on-exit';
import { PostgresTestServer } from '../../test/support/postgres-server';
import { anthropicHeaders, startLedger, type LedgerSetup } from './ledger-gateway';
import { UPSTREAM_API_KEY } from './messages-wire';
import { NodeChild } from './node-child';
import { portkeyHeaders, portkeyVersion, startPortkey } from './portkey';

export const PEER_NAMES = ['direct', 'bare proxy', 'Portkey', 'llm-ledger', 'llm-ledger on PostgreSQL', 'llm-ledger (baseline)'] as const;
/** One of PEER_NAMES; llm-ledger's with `, N workers` after it when it runs N service processes (LEDGER_WORKERS). */
export type PeerName = (typeof PEER_NAMES)[number] | `${'llm-ledger' | 'llm-ledger on PostgreSQL'}, ${number} workers`;
/**
 * How BENCH_GATEWAY_PEERS names them (`ledger`: on its default SQLite log; `ledger-pg`: on a local
 * PostgreSQL the bench starts; `ledger-base`: another build of llm-ledger, `baselineDist`, on its own
 * SQLite log, to compare a change with the build before it within one run).
 */
export const PEER_KEYS: Readonly<Record<string, PeerName>> = {
  direct: 'direct',
  bare: 'bare proxy',
  portkey: 'Portkey',
  ledger: 'llm-ledger',
  'ledger-pg': 'llm-ledger on PostgreSQL',
  'ledger-base': 'llm-ledger (baseline)',
};

export interface Target {
  readonly origin: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** llm-ledger's keys, one per organization (BENCH_GATEWAY_ORGANIZATIONS), shared out among the load's loops (loop-keys.ts). */
  readonly apiKeys?: readonly string[];
}

interface MeasuredProcess {
  usage(collectGarbage?: boolean): Promise<ServiceUsage>;
}

export type Peer =
  | {
      readonly name: PeerName;
      readonly available: true;
      readonly target: Target;
      readonly process?: MeasuredProcess;
      readonly ledger?: ServiceProcess;
      /** llm-ledger's service processes (LEDGER_WORKERS). */
      readonly workers?: number;
    }
  | { readonly name: PeerName; readonly available: false; readonly reason: string };

export interface BenchProcesses {
  readonly upstream: NodeChild;
  readonly load: NodeChild;
  readonly peers: readonly Peer[];
  /** Stops every process started, and removes the logs unless the run failed. */
  stop(keepLogs: boolean): Promise<void>;
  readonly logDir: string;
}

const DIST_GATEWAY = __dirname;
const PROBE = join(__dirname, '..', 'http', 'service-probe.js');

/**
 * Starts the upstream, the peers named and the load generator; llm-ledger once per worker count in
 * `ledgerWorkers` (default [1]), one after the other on logs of their own; its baseline, in one
 * process, from `baselineDist` (a built checkout's `dist` directory).
 */
export async function startProcesses(options: {
  readonly peers: ReadonlySet<PeerName>;
  readonly exposeGc: boolean;
  readonly ledgerWorkers?: readonly number[];
  readonly baselineDist?: string;
  /** Gateway keys each of the benchmark's organizations holds (BENCH_GATEWAY_ORGANIZATION_KEYS; default 1, the one called with). */
  readonly organizationKeys?: number;
  /** Organizations llm-ledger's calls are spread over (BENCH_GATEWAY_ORGANIZATIONS; default 1). */
  readonly organizations?: number;
}): Promise<BenchProcesses> {
  const logDir = mkdtempSync(join(tmpdir(), 'llm-ledger-gateway-bench-'));
  removeOnExit(logDir);
  const gcFlags = options.exposeGc ? ['--expose-gc'] : [];
  const stoppers: Array<() => Promise<void>> = [];
  const stop = async (keepLogs: boolean): Promise<void> => {
    await Promise.all(stoppers.map((stopOne) => stopOne().catch((error: unknown) => console.error(error))));
    if (keepLogs) keepOnExit(logDir);
    else rmSync(logDir, { recursive: true, force: true });
  };
  try {
    const child = async (name: string, script: string, env: Record<string, string> = {}): Promise<NodeChild> => {
      const started = await NodeChild.start({ name, args: [join(DIST_GATEWAY, script)], nodeFlags: gcFlags, env, logPath: join(logDir, `${script}.log`), ready: { kind: 'notice' } });
      stoppers.push(() => started.stop());
      return started;
    };
    const upstream = await child('upstream', 'upstream.child.js');
    const peers: Peer[] = [];
    const wanted = (name: PeerName): boolean => options.peers.has(name);
    if (wanted('direct')) {
      peers.push({ name: 'direct', available: true, target: { origin: upstream.baseUrl, path: '/v1/messages', headers: { ...anthropicHeaders(), 'x-api-key': UPSTREAM_API_KEY } } });
    }
    if (wanted('bare proxy')) {
      const bare = await child('bare proxy', 'bare-proxy.child.js', { BENCH_UPSTREAM_URL: upstream.baseUrl });
      peers.push({ name: 'bare proxy', available: true, process: bare, target: { origin: bare.baseUrl, path: '/v1/messages', headers: { ...anthropicHeaders(), 'x-api-key': 'bench-caller-key' } } });
    }
    if (wanted('Portkey')) peers.push(await portkeyPeer(upstream, logDir, gcFlags, stoppers));
    const workerCounts = options.ledgerWorkers ?? [1];
    const setup: LedgerSetup = { organizationKeys: options.organizationKeys ?? 1, organizations: options.organizations ?? 1 };
    if (wanted('llm-ledger')) for (const workers of workerCounts) peers.push(await ledgerPeer('llm-ledger', upstream, gcFlags, stoppers, workers, { setup }));
    if (wanted('llm-ledger on PostgreSQL')) {
      for (const workers of workerCounts) {
        const server = await PostgresTestServer.start();
        const url = await server.createDatabase('gateway_bench').catch(async (error: unknown) => {
          await server.stop();
          throw error;
        });
        peers.push(await ledgerPeer('llm-ledger on PostgreSQL', upstream, gcFlags, stoppers, workers, { setup, store: { url, stop: () => server.stop() } }));
      }
    }
    if (wanted('llm-ledger (baseline)')) {
      peers.push(
        options.baselineDist === undefined
          ? { name: 'llm-ledger (baseline)', available: false, reason: 'BENCH_GATEWAY_BASELINE names no build (a dist directory with src/main.js)' }
          : await ledgerPeer('llm-ledger', upstream, gcFlags, stoppers, 1, { setup, build: { name: 'llm-ledger (baseline)', distRoot: options.baselineDist } }),
      );
    }
    const load = await child('load', 'load.child.js');
    return { upstream, load, peers, stop, logDir };
  } catch (error) {
    await stop(true);
    throw error;
  }
}

/**
 * BENCH_GATEWAY_LEDGER_NODE_FLAGS: Node flags for llm-ledger's processes only, separated by spaces;
 * e.g. `--perf-basic-prof`, so that Linux `perf` names the JavaScript in its samples of any of the
 * service's threads (the projection worker's too, which V8's own profiler cannot see: bench/README.md).
 */
function ledgerNodeFlags(): string[] {
  return (process.env.BENCH_GATEWAY_LEDGER_NODE_FLAGS ?? '').split(/\s+/).filter((flag) => flag !== '');
}

/** llm-ledger's gateway in `workers` processes on its default SQLite log, or on the PostgreSQL log `store` names (stopped after the service). */
async function ledgerPeer(
  base: 'llm-ledger' | 'llm-ledger on PostgreSQL',
  upstream: NodeChild,
  gcFlags: readonly string[],
  stoppers: Array<() => Promise<void>>,
  workers: number,
  {
    setup,
    store,
    build,
  }: { readonly setup: LedgerSetup; readonly store?: { readonly url: string; stop(): Promise<void> }; readonly build?: { readonly name: PeerName; readonly distRoot: string } },
): Promise<Peer> {
  const name: PeerName = build?.name ?? (workers === 1 ? base : `${base}, ${workers} workers`);
  const ledger = await startLedger({
    upstreamBaseUrl: upstream.baseUrl,
    nodeFlags: [...gcFlags, ...ledgerNodeFlags()],
    workers,
    ...setup,
    ...(store === undefined ? {} : { store: store.url }),
    ...(build === undefined ? {} : { distRoot: build.distRoot }),
  }).catch((error: unknown) => String(error));
  if (typeof ledger === 'string') {
    if (store !== undefined) stoppers.push(() => store.stop());
    return { name, available: false, reason: `the service did not start: ${ledger.slice(0, 500)}` };
  }
  stoppers.push(async () => {
    await ledger.service.stop();
    await store?.stop();
  });
  return ledger.available
    ? { name, available: true, workers, process: ledger.service, ledger: ledger.service, target: { origin: ledger.service.baseUrl, path: '/anthropic/v1/messages', headers: { ...anthropicHeaders(), 'x-api-key': ledger.keys[0]! }, apiKeys: ledger.keys } }
    : { name, available: false, reason: ledger.reason };
}

async function portkeyPeer(upstream: NodeChild, logDir: string, gcFlags: readonly string[], stoppers: Array<() => Promise<void>>): Promise<Peer> {
  try {
    const portkey = await startPortkey({ logPath: join(logDir, 'portkey.log'), nodeFlags: [...gcFlags, '--require', PROBE] });
    stoppers.push(() => portkey.stop());
    return {
      name: 'Portkey',
      available: true,
      process: portkey,
      target: { origin: portkey.baseUrl, path: '/v1/messages', headers: { ...anthropicHeaders(), ...portkeyHeaders(upstream.baseUrl), 'x-api-key': UPSTREAM_API_KEY } },
    };
  } catch (error) {
    return { name: 'Portkey', available: false, reason: `@portkey-ai/gateway@${portkeyVersion()}: ${String(error).slice(0, 500)}` };
  }
}
