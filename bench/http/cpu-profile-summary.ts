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

/** Packages that serve HTTP (Fastify or Express and their parts, Nest's HTTP pipeline, validation of bodies). */
const HTTP_PACKAGES = new Set([
  'express', 'router', 'body-parser', 'raw-body', 'content-type', 'type-is', 'on-finished', 'parseurl',
  'path-to-regexp', 'iconv-lite', 'debug', 'mime-types', 'mime-db', 'etag', 'fresh', 'send', 'finalhandler',
  'qs', 'media-typer', 'bytes', 'depd', 'statuses', 'http-errors', 'encodeurl', 'escape-html', 'vary',
  'cookie', 'proxy-addr', 'forwarded', 'accepts', 'negotiator', 'unpipe', 'ee-first', 'safe-buffer',
  '@nestjs/platform-express', '@nestjs/core', '@nestjs/common', 'class-validator', 'class-transformer',
  'reflect-metadata', 'validator', 'libphonenumber-js',
  'fastify', '@nestjs/platform-fastify', 'find-my-way', 'fast-querystring', 'fast-decode-uri-component', 'avvio',
  'fast-json-stringify', '@fastify/error', '@fastify/fast-json-stringify-compiler', 'fastify-plugin', 'light-my-request',
  'abstract-logging', 'process-warning', 'rfdc', 'secure-json-parse', 'toad-cache', 'safe-regex2', 'ret',
  '@fastify/ajv-compiler', '@fastify/proxy-addr', 'fastq', 'reusify', '@fastify/static', '@fastify/send',
]);
const LOGGING_PACKAGES = new Set(['pino', 'nestjs-pino', 'pino-http', 'sonic-boom', 'fast-redact', 'quick-format-unescaped', 'thread-stream']);
const OBSERVABILITY_PACKAGES = new Set(['prom-client', 'tdigest', 'bintrees', '@opentelemetry/api', '@opentelemetry/semantic-conventions']);
/** Native (V8 or addon) functions by name: better-sqlite3's statement calls, and the socket writes. */
const STORAGE_NATIVE = new Set(['run', 'all', 'get', 'iterate', 'exec', 'prepare', 'pragma', 'transaction']);
const HTTP_NATIVE = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'Hash', 'digest', 'parse']);

/**
 * Which layer of the service a sample belongs to: the HTTP stack (Node's server, Fastify or Express, Nest's
 * pipeline and body validation, this project's src/http), storage (SQLite, the event store and the
 * other stores), logging, metrics and tracing, V8's own work (garbage collection), idle, or the
 * ledger (everything else: commands, deciders, the conversation runtime). `parse` counts as HTTP:
 * the event store's JSON parsing runs inside its own JavaScript functions, the native `parse` frame
 * is Node's HTTP parser.
 */
export function layerOf(node: ProfileNode): string {
  const { functionName, url } = node.callFrame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(idle)') return 'idle';
  if (url === '') {
    if (STORAGE_NATIVE.has(functionName)) return 'storage';
    if (HTTP_NATIVE.has(functionName)) return 'http';
    return 'ledger';
  }
  if (url.startsWith('node:')) {
    return /^node:(_http_|net|internal\/(streams|stream_base_commons|http|url|querystring)|stream|http|url|querystring)/.test(url) ? 'http' : 'ledger';
  }
  const pkg = packageOf(url);
  if (HTTP_PACKAGES.has(pkg) || pkg === 'project src/http' || pkg === 'project src/console') return 'http';
  if (LOGGING_PACKAGES.has(pkg) || pkg === 'project src/logging') return 'logging';
  if (OBSERVABILITY_PACKAGES.has(pkg) || pkg === 'project src/observability') return 'metrics and tracing';
  if (pkg === 'better-sqlite3' || /^project src\/(event-store|answer-store|projection-runner|webhooks)$/.test(pkg)) return 'storage';
  return 'ledger';
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
  const byLayer = new Map<string, number>();
  for (const [id, n] of selfSamples) {
    const node = byId.get(id)!;
    add(byFunction, label(node), n);
    add(byPackage, packageOf(node.callFrame.url), n);
    add(byLayer, layerOf(node), n);
  }
  const lines = [`${total} samples`, '', 'self time by layer:'];
  for (const [name, n] of [...byLayer].sort((a, b) => b[1] - a[1])) lines.push(`  ${pct(n).padStart(7)}  ${name}`);
  lines.push('', 'self time by package:');
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
