import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');

/**
 * Builds the console from its sources into a fresh directory (the same Vite build as
 * `npm run build`), so the tests serve what the sources say now rather than a stale dist/.
 */
export function buildConsole(): string {
  const outDir = mkdtempSync(join(tmpdir(), 'llm-ledger-console-'));
  const vite = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  const result = spawnSync(process.execPath, [vite, 'build', '--config', join(ROOT, 'console', 'vite.config.mts'), '--outDir', outDir, '--emptyOutDir', '--logLevel', 'warn'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`the console did not build:\n${result.stdout}\n${result.stderr}`);
  return outDir;
}
