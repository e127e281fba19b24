/**
 * The Portkey gateway (`@portkey-ai/gateway`, open source) as a peer: installed at bench time into
 * a cache folder from the pinned package.json and package-lock.json in bench/gateway/portkey/ (`npm
 * ci --ignore-scripts`), never into the project's own node_modules tree, and started as its README
 * says (`node build/start-server.js --port=<port> --headless`). Calls reach the bench upstream through
 * its custom-host headers: `x-portkey-provider: anthropic`, `x-portkey-custom-host: <upstream>/v1`.
 * bench/README.md says why it is installed this way and why two of its dependencies are pinned.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { NodeChild } from './node-child';

const SOURCE_DIR = join(__dirname, '..', '..', '..', 'bench', 'gateway', 'portkey');
const PACKAGE = '@portkey-ai/gateway';
/** `npm ci` of its 95 packages takes about 10 s here; a stalled registry must not hang the benchmark. */
const INSTALL_TIMEOUT_MS = 300_000;

export function portkeyVersion(): string {
  const manifest = JSON.parse(readFileSync(join(SOURCE_DIR, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  return manifest.dependencies[PACKAGE]!;
}

function cacheDir(): string {
  return process.env.BENCH_PORTKEY_DIR ?? join(__dirname, '..', '..', '..', 'node_modules', '.cache', 'llm-ledger-bench', `portkey-${portkeyVersion()}`);
}

function installedVersion(dir: string): string | undefined {
  const manifest = join(dir, 'node_modules', PACKAGE, 'package.json');
  return existsSync(manifest) ? (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version : undefined;
}

/** The folder holding the pinned Portkey, installing it first when it is not there; throws with npm's output on failure. */
export function ensurePortkey(): string {
  const dir = cacheDir();
  if (installedVersion(dir) === portkeyVersion()) return dir;
  mkdirSync(dir, { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(SOURCE_DIR, file), join(dir, file));
  console.log(`installing ${PACKAGE}@${portkeyVersion()} into ${dir} (npm ci --ignore-scripts)`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS });
  if (result.status !== 0 || installedVersion(dir) !== portkeyVersion()) {
    throw new Error(`npm ci of ${PACKAGE} failed (${result.error?.message ?? `exit ${result.status}`}): ${(result.stderr ?? '').slice(-2_000)}`);
  }
  return dir;
}

/** A port nothing listens on now (Portkey takes its port as an argument, it cannot pick one). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startPortkey(options: { readonly logPath: string; readonly nodeFlags: readonly string[] }): Promise<NodeChild> {
  const dir = ensurePortkey();
  const port = await freePort();
  return NodeChild.start({
    name: 'Portkey',
    args: [join(dir, 'node_modules', PACKAGE, 'build', 'start-server.js'), `--port=${port}`, '--headless'],
    nodeFlags: options.nodeFlags,
    // As deployed: production mode serves no UI and no log stream.
    env: { NODE_ENV: 'production' },
    logPath: options.logPath,
    ready: { kind: 'url', url: `http://127.0.0.1:${port}/`, port },
  });
}

/** Request headers that route a Messages call through Portkey to the bench upstream. */
export function portkeyHeaders(upstreamBaseUrl: string): Record<string, string> {
  return { 'x-portkey-provider': 'anthropic', 'x-portkey-custom-host': `${upstreamBaseUrl}/v1` };
}
