'use strict';
/**
 * Lets a process or a worker thread run the TypeScript sources outside jest: `node -r <this file>
 * <file.ts>`, and `startModuleWorker` (src/worker/start-module-worker.ts) passes it to the worker
 * threads it starts while the service runs from its sources (in tests).
 * Each required .ts file is compiled on load by @swc/core (types stripped, no type checking; the
 * suite's `tsc --noEmit` does that), with the same settings jest's @swc/jest transform uses.
 */
const { readFileSync } = require('node:fs');
const { transformSync } = require('@swc/core');

require.extensions['.ts'] = function compileTypeScript(module, filename) {
  const { code } = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    sourceMaps: 'inline',
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  });
  module._compile(code, filename);
};
