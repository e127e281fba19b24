#!/usr/bin/env node
/**
 * The `llm-ledger` executable (package.json "bin"): binds the CLI to this process's arguments,
 * environment and streams. Everything else lives in run-cli.ts, which tests call in-process.
 */
import { EXIT_FAILURE, processIo } from './cli-io';
import { runCli } from './run-cli';

runCli(process.argv.slice(2), { io: processIo(), env: process.env }).then(
  (exitCode) => {
    // exitCode rather than exit(): stdout may still be flushing to a pipe.
    process.exitCode = exitCode;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = EXIT_FAILURE;
  },
);
