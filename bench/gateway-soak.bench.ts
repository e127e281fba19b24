/**
 * The gateway's streamed soak (issue 23): one peer (llm-ledger's gateway by default) relaying
 * streamed calls from 64 closed loops for ten minutes against the bench upstream at 50 ms per call,
 * the peer run with --expose-gc so that every sample reads its heap right after a full collection
 * (what it retains) beside its resident set, and the calls it served since the last sample. Not part
 * of `npm run bench` without names.
 *
 * The goal: memory flat, read as the growth of RSS and of the heap after GC over the second half.
 * For llm-ledger each sample also says how far its read models ran behind (the largest
 * `ledger_projection_lag_events` of the scrapes since the previous sample, one a second) and how large
 * its log's WAL file is: the projection worker, which runs at a lower priority, also checkpoints it.
 *
 * Environment: BENCH_GATEWAY_SOAK_MINUTES (default 10; e.g. 1 to try it), BENCH_GATEWAY_SOAK_PEER
 * (ledger, bare or portkey), BENCH_GATEWAY_SOAK_SAMPLE_SECONDS (default 60, or a tenth of the soak
 * when that is shorter), BENCH_GATEWAY_SOAK_CONCURRENCY (64), BENCH_GATEWAY_STREAM_DELTAS (20),
 * BENCH_GATEWAY_BODY_BYTES (1024), BENCH_GATEWAY_SOAK_DELAY_MS (50).
 */
import { loadavg } from 'node:os';
import type { UpstreamCounters, UpstreamSettings } from './gateway/child.protocol';
import type { LoadResult, LoadSpec } from './gateway/load.child';
import type { ServiceProcess } from './http/service-process';
import { scrapeMetrics } from './gateway/ledger-gateway';
import { requestBody } from './gateway/messages-wire';
import { PEER_KEYS, startProcesses, type PeerName } from './gateway/peers';

const MIB = 2 ** 20;
/** The soak never sends more calls than this, whatever its duration. */
const MAX_SOAK_CALLS = 20_000_000;
/** How often llm-ledger's projection lag is scraped between two samples, in milliseconds. */
const LAG_SCRAPE_INTERVAL_MS = 1_000;
const PROJECTION_LAG = /^ledger_projection_lag_events\{[^}]*\} (\d+)$/gm;

export interface GatewaySoakSample {
  readonly atSeconds: number;
  /** Calls the upstream answered since the previous sample. */
  readonly calls: number;
  readonly rssMiB: number;
  readonly heapUsedAfterGcMiB: number;
  readonly heapTotalMiB: number;
  readonly externalMiB: number;
  readonly loadAverage1m: number;
  /** llm-ledger only: the most events any projection was behind the log in the scrapes since the previous sample. */
  readonly projectionLagMaxEvents?: number;
  /** llm-ledger only: the size of its log's write-ahead log file. */
  readonly walMiB?: number;
}

export interface GatewaySoakReport {
  readonly peer: PeerName;
  readonly available: boolean;
  readonly reason?: string;
  readonly minutes: number;
  readonly samples: readonly GatewaySoakSample[];
  /** From the sample at half time to the last one, in percent. */
  readonly rssGrowthSecondHalfPercent?: number;
  readonly heapGrowthSecondHalfPercent?: number;
  readonly load?: LoadResult;
}

export async function run(): Promise<GatewaySoakReport> {
  const minutes = Number(process.env.BENCH_GATEWAY_SOAK_MINUTES ?? 10);
  const peerKey = process.env.BENCH_GATEWAY_SOAK_PEER ?? 'ledger';
  const peerName = PEER_KEYS[peerKey];
  if (peerName === undefined || peerName === 'direct') throw new Error(`BENCH_GATEWAY_SOAK_PEER: expected ledger, bare or portkey, got "${peerKey}"`);
  const sampleSeconds = Number(process.env.BENCH_GATEWAY_SOAK_SAMPLE_SECONDS ?? Math.min(60, (minutes * 60) / 10));
  const concurrency = Number(process.env.BENCH_GATEWAY_SOAK_CONCURRENCY ?? 64);
  const body = requestBody({ stream: true, bytes: Number(process.env.BENCH_GATEWAY_BODY_BYTES ?? 1024) });
  const upstreamSettings: UpstreamSettings = {
    delayMs: Number(process.env.BENCH_GATEWAY_SOAK_DELAY_MS ?? 50),
    streamDeltas: Number(process.env.BENCH_GATEWAY_STREAM_DELTAS ?? 20),
    expectedBodyBase64: body.toString('base64'),
  };

  const processes = await startProcesses({ peers: new Set([peerName]), exposeGc: true });
  let failed = true;
  try {
    const peer = processes.peers.find((candidate) => candidate.name === peerName)!;
    if (!peer.available) {
      console.log(`${peerName}: not available: ${peer.reason}`);
      failed = false;
      return { peer: peerName, available: false, reason: peer.reason, minutes, samples: [] };
    }
    await processes.upstream.request('configure', { settings: upstreamSettings });
    const samples: GatewaySoakSample[] = [];
    const startedAt = performance.now();
    let counted = 0;
    const lag = peer.ledger === undefined ? undefined : new LagWatch(peer.ledger);
    const sample = async (): Promise<void> => {
      const usage = await peer.process!.usage(true);
      const { requests } = await processes.upstream.request<UpstreamCounters>('counters');
      const ledgerFigures = peer.ledger === undefined ? {} : { projectionLagMaxEvents: await lag!.takeMax(), walMiB: mib(peer.ledger.fileBytes('ledger.sqlite-wal')) };
      const entry: GatewaySoakSample = {
        atSeconds: Math.round((performance.now() - startedAt) / 1000),
        calls: requests - counted,
        rssMiB: mib(usage.rssBytes),
        heapUsedAfterGcMiB: mib(usage.heapUsedBytes),
        heapTotalMiB: mib(usage.heapTotalBytes),
        externalMiB: mib(usage.externalBytes),
        loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
        ...ledgerFigures,
      };
      counted = requests;
      samples.push(entry);
      console.log(JSON.stringify(entry));
    };
    await sample();
    const timer = setInterval(() => void sample().catch((error: unknown) => console.error(error)), sampleSeconds * 1000);
    const spec: LoadSpec = { ...peer.target, bodyBase64: upstreamSettings.expectedBodyBase64, stream: true, concurrency, durationMs: minutes * 60_000, maxCalls: MAX_SOAK_CALLS };
    const load = await processes.load.request<LoadResult>('run', { spec });
    clearInterval(timer);
    lag?.stop();
    await sample();
    const half = samples.find((entry) => entry.atSeconds >= (minutes * 60) / 2) ?? samples[0]!;
    const last = samples[samples.length - 1]!;
    const report: GatewaySoakReport = {
      peer: peerName,
      available: true,
      minutes,
      samples,
      rssGrowthSecondHalfPercent: percent(half.rssMiB, last.rssMiB),
      heapGrowthSecondHalfPercent: percent(half.heapUsedAfterGcMiB, last.heapUsedAfterGcMiB),
      load,
    };
    console.table(samples);
    console.log(
      `${peerName}, ${minutes} min streamed at ${concurrency} concurrent, ${upstreamSettings.delayMs} ms upstream: ${load.completed} calls (${load.callsPerSecond}/s), ${load.failed} failed; ` +
        `second half: RSS ${half.rssMiB} → ${last.rssMiB} MiB (${report.rssGrowthSecondHalfPercent} %), heap after GC ${half.heapUsedAfterGcMiB} → ${last.heapUsedAfterGcMiB} MiB (${report.heapGrowthSecondHalfPercent} %)`,
    );
    if (lag !== undefined) {
      const lags = samples.map((entry) => entry.projectionLagMaxEvents ?? 0);
      const wals = samples.map((entry) => entry.walMiB ?? 0);
      console.log(`projection lag, largest per sample: first half ${Math.max(...lags.slice(0, samples.indexOf(half)))}, second half ${Math.max(...lags.slice(samples.indexOf(half)))} events; WAL file at most ${Math.max(...wals)} MiB`);
    }
    failed = false;
    return report;
  } finally {
    await processes.stop(failed);
    if (failed) console.error(`logs kept in ${processes.logDir}`);
  }
}

/** Scrapes llm-ledger's projection lag once a second and keeps the largest figure until it is taken. */
class LagWatch {
  private max = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly service: ServiceProcess) {
    this.timer = setInterval(() => void this.scrape().catch((error: unknown) => console.error(error)), LAG_SCRAPE_INTERVAL_MS);
  }

  /** The largest lag since the last call, this moment's included. */
  async takeMax(): Promise<number> {
    await this.scrape();
    const max = this.max;
    this.max = 0;
    return max;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async scrape(): Promise<void> {
    for (const [, events] of (await scrapeMetrics(this.service)).matchAll(PROJECTION_LAG)) this.max = Math.max(this.max, Number(events));
  }
}

function mib(bytes: number): number {
  return Math.round((bytes / MIB) * 10) / 10;
}

function percent(from: number, to: number): number {
  return Math.round(((to - from) / from) * 1000) / 10;
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
