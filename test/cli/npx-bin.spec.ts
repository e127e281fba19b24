import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT_FAILURE, EXIT_USAGE } from '../../src/cli/cli-io';

const ROOT = join(__dirname, '..', '..');
/**
 * What `npm run build:service` compiles, and what it needs to (the PostgreSQL store's bench starts
 * its server with the tests' helper).
 */
const BUILD_INPUTS = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'bin', 'src', 'projections', 'bench', 'test/support/postgres-server.ts'];
/** Two compiles of the whole service on two shared cores, with room to spare. */
const NPX_TEST_TIMEOUT_MS = 240_000;

/**
 * The package's own root copied to a fresh folder (its sources, its bin, the repository's
 * node_modules linked), so the build there deletes and rewrites a dist/ no other test reads.
 */
function packageCopy(): string {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-npx-'));
  for (const entry of BUILD_INPUTS) cpSync(join(ROOT, entry), join(directory, entry), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(directory, 'node_modules'), 'dir');
  return directory;
}

describe('npx llm-ledger from a rebuilt dist (issue 26, finding 1)', () => {
  let directory: string;
  // A cache of its own: npx links the package there on first use, as it does on a developer's machine.
  const run = (command: string, args: string[]): SpawnSyncReturns<string> =>
    spawnSync(command, args, {
      cwd: directory,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        HOME: directory,
        npm_config_cache: join(directory, '.npm-cache'),
        npm_config_offline: 'true',
        npm_config_yes: 'true',
        npm_config_update_notifier: 'false',
        npm_config_audit: 'false',
        npm_config_fund: 'false',
      },
    });

  beforeAll(() => {
    directory = packageCopy();
  });

  afterAll(() => {
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  });

  it('keeps the bin outside dist/ and executable in git, so deleting dist/ cannot take its mode away', () => {
    const bin = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin['llm-ledger'];
    expect(bin).toBe('bin/llm-ledger.js');
    const indexed = spawnSync('git', ['ls-files', '--stage', bin!], { cwd: ROOT, encoding: 'utf8' });
    expect(indexed.stdout).toMatch(/^100755 /);
    expect(statSync(join(ROOT, bin!)).mode & 0o111).not.toBe(0);
  });

  it(
    'runs the CLI through npx after the package was linked before a build, and says what to do before it is built',
    () => {
      // Linked by a first `npx` while dist/ is missing: it says so, naming the command that builds it.
      const unbuilt = run('npx', ['llm-ledger', '--help']);
      expect(unbuilt.stderr).toContain('llm-ledger: the CLI is not built (no dist/src/cli/main.js) — run npm run build');
      expect(unbuilt.status).toBe(EXIT_FAILURE);

      // The build deletes dist/ and writes every file anew, without the executable bit.
      const build = run('npm', ['run', '--silent', 'build:service']);
      expect(build.stderr).toBe('');
      expect(build.status).toBe(0);
      expect(statSync(join(directory, 'dist', 'src', 'cli', 'main.js')).mode & 0o111).toBe(0);

      const help = run('npx', ['llm-ledger', '--help']);
      expect(help.stderr).toBe('');
      expect(help.stdout).toMatch(/^Usage: llm-ledger <command> \[options\]/);
      expect(help.status).toBe(0);
      // A command that reaches a store: there is none at this path, which it says (exit 2).
      const rebuild = run('npx', ['llm-ledger', 'projections', 'rebuild', '--store', `sqlite:${join(directory, 'missing.sqlite')}`]);
      expect(rebuild.stderr).toContain('missing.sqlite');
      expect(rebuild.status).toBe(EXIT_USAGE);
    },
    NPX_TEST_TIMEOUT_MS,
  );
});
