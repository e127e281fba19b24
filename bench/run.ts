/**
 * `npm run bench` runs every benchmark; `npm run bench -- <name> [<name>…]` runs the named ones.
 * Each prints its own table; this runner adds the machine and writes one JSON file per benchmark to
 * bench/results/<name>.json (the README quotes those figures).
 */
import { cpus, loadavg } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

type Bench = () => Promise<unknown>;

/** Loaded lazily, so running one benchmark does not load (or set up) the others. */
const BENCHMARKS: Record<string, () => Promise<Bench>> = {
  'event-store': async () => (await import('./event-store.bench')).run,
  runtime: async () => (await import('./runtime.bench')).run,
  'projection-rebuild': async () => (await import('./projection-rebuild.bench')).run,
  'full-path': async () => (await import('./full-path.bench')).run,
  'full-path-pair': async () => (await import('./full-path-pair.bench')).run,
  'admission-history': async () => (await import('./admission-history.bench')).run,
  'read-side': async () => (await import('./read-side.bench')).run,
  http: async () => (await import('./http.bench')).run,
  soak: async () => (await import('./soak.bench')).run,
  gateway: async () => (await import('./gateway.bench')).run,
  'postgres-store': async () => (await import('./postgres-store.bench')).run,
  'postgres-hot-organization': async () => (await import('./postgres-hot-organization.bench')).run,
  'read-store-postgres': async () => (await import('./read-store-postgres.bench')).run,
  'gateway-soak': async () => (await import('./gateway-soak.bench')).run,
  'json-members': async () => (await import('./json-members.bench')).run,
  'gateway-batches': async () => (await import('./gateway-batches.bench')).run,
  'account-state': async () => (await import('./account-state.bench')).run,
  'balances-projection': async () => (await import('./balances-projection.bench')).run,
};
/** Run only when named: the soaks take ten minutes each, and the pair needs a baseline build. */
const ONLY_WHEN_NAMED = new Set(['soak', 'gateway-soak', 'full-path-pair']);

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cores: number;
  readonly node: string;
  readonly date: string;
  /** 1-minute load average when the run started: the machine is shared, so this says how much. */
  readonly loadAverage1m: number;
}

export function machineInfo(): MachineInfo {
  return {
    cpuModel: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    node: process.version,
    date: new Date().toISOString(),
    loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
  };
}

async function main(names: readonly string[]): Promise<void> {
  const unknown = names.filter((name) => !(name in BENCHMARKS));
  if (unknown.length > 0) {
    console.error(`Unknown benchmark ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}`);
    process.exit(2);
  }
  const selected = names.length > 0 ? names : Object.keys(BENCHMARKS).filter((name) => !ONLY_WHEN_NAMED.has(name));
  const machine = machineInfo();
  console.log(`machine: ${machine.cores} × ${machine.cpuModel}, node ${machine.node}, ${machine.date}, load average ${machine.loadAverage1m}`);
  const resultsDir = join(__dirname, '..', '..', 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  for (const name of selected) {
    console.log(`\n=== ${name} ===`);
    const run = await BENCHMARKS[name]!();
    const result = await run();
    const file = join(resultsDir, `${name}.json`);
    writeFileSync(file, `${JSON.stringify({ machine, result }, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value), 2)}\n`);
    console.log(`results: ${file}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
