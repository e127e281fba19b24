#!/usr/bin/env node
'use strict';
// The package's executable (package.json "bin"). It lives outside dist/ and is executable in git,
// because every build deletes dist/ and writes its files without the executable bit: a bin pointing
// into dist/ stopped working (Permission denied) after the first rebuild.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const cli = join(__dirname, '..', 'dist', 'src', 'cli', 'main.js');
if (!existsSync(cli)) {
  process.stderr.write('llm-ledger: the CLI is not built (no dist/src/cli/main.js) — run npm run build\n');
  // The CLI's exit status for a command that could not run (src/cli/cli-io.ts, EXIT_FAILURE).
  process.exitCode = 3;
} else {
  require(cli);
}
