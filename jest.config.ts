import type { Config } from 'jest';

const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
          target: 'es2022',
        },
        module: { type: 'commonjs' },
      },
    ],
  },
  // Two cores: one worker per core keeps file-backed SQLite tests from starving each other.
  maxWorkers: 2,
  // A worker whose heap grew past this after a test file is replaced by a fresh one: a worker that has
  // run a hundred suites held 3.3 GB, and a suite that takes 67 s in a fresh worker took 370–470 s
  // in it (garbage collection of the grown heap), at the end of CI's run.
  workerIdleMemoryLimit: '1GB',
  testTimeout: 30_000,
};

export default config;
