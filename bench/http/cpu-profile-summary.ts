/**
 * Summarises a V8 CPU profile (`.cpuprofile`, from --cpu-prof or BENCH_HTTP_PROFILE): the share of
 * all samples spent in each function itself (self time), and per package (node_modules/<name>, node
 * internals, this project), so a profile figure can be quoted without opening DevTools.
 *
 * `node dist/bench/http/cpu-profile-summary.js <file.cpuprofile> [top=25] [name-filter…]`: with
 * filters, also the inclusive share (self plus everything it called) of functions of those names.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
}

function packageOf(url: string): string {
  if (url === '') return '(native/V8)';
  if (url.startsWith('node:')) return 'node internals';
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (match !== null) return match[1]!;
  const project = /\/dist\/((?:src|projections|bench)\/[^/]+)/.exec(url);
  return project !== null ? `project ${project[1]}` : url;
}

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.split('/').slice(-2).join('/');
  return `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
}

export function summarise(profile: CpuProfile, top: number, filters: readonly string[]): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfSamples = new Map<number, number>();
  for (const id of profile.samples) selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1);
  const total = profile.samples.length;
  const pct = (n: number): string => `${((100 * n) / total).toFixed(1)} %`;
  const add = (map: Map<string, number>, key: string, n: number): void => void map.set(key, (map.get(key) ?? 0) + n);

  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  for (const [id, n] of selfSamples) {
    const node = byId.get(id)!;
    add(byFunction, label(node), n);
    add(byPackage, packageOf(node.callFrame.url), n);
  }
  const lines = [`${total} samples`, '', 'self time by package:'];
  for (const [name, n] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(n).padStart(7)}  ${name}`);
  lines.push('', 'self time by function:');
  for (const [name, n] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(n).padStart(7)}  ${name}`);

  if (filters.length > 0) {
    // Inclusive: a sample counts once for a name if any frame on its stack has that name.
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    lines.push('', 'inclusive time:');
    for (const filter of filters) {
      let n = 0;
      for (const [id, count] of selfSamples) {
        for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
          if (byId.get(at)!.callFrame.functionName === filter) {
            n += count;
            break;
          }
        }
      }
      lines.push(`  ${pct(n).padStart(7)}  ${filter}`);
    }
  }
  return lines.join('\n');
}

if (require.main === module) {
  const [file, top, ...filters] = process.argv.slice(2);
  if (file === undefined) {
    console.error('usage: cpu-profile-summary <file.cpuprofile> [top] [function names…]');
    process.exit(2);
  }
  console.log(summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, Number(top ?? 25), filters));
}
