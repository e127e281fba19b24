import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * The require hook that compiles TypeScript on load (a development tool, not part of the build): a
 * worker thread started while this process runs from its TypeScript sources (jest, or
 * `node -r tools/ts-require-hook.js`) needs it to load those same sources.
 */
export const TYPESCRIPT_REQUIRE_HOOK = resolve(__dirname, '..', '..', 'tools', 'ts-require-hook.js');

/**
 * Starts a worker thread on one of this code base's modules, named without its extension
 * (`join(__dirname, 'projection.worker')`). From the compiled build that is the `.js` file; from the
 * TypeScript sources it is the `.ts` file, loaded through TYPESCRIPT_REQUIRE_HOOK.
 */
export function startModuleWorker(modulePath: string, options: WorkerOptions = {}): Worker {
  const extension = extname(__filename);
  const filename = `${modulePath}${extension}`;
  if (extension !== '.ts') return new Worker(filename, options);
  if (!existsSync(TYPESCRIPT_REQUIRE_HOOK)) {
    throw new Error(`Running from TypeScript sources needs ${TYPESCRIPT_REQUIRE_HOOK} to start ${filename} in a worker`);
  }
  return new Worker(filename, {
    ...options,
    execArgv: [...(options.execArgv ?? process.execArgv), '--require', TYPESCRIPT_REQUIRE_HOOK],
  });
}
