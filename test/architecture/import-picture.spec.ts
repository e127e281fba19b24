import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');

/** Every import specifier of every .ts file below `folder`, resolved to a path from the root when relative. */
function importsOf(folder: string): { readonly file: string; readonly target: string }[] {
  const found: { file: string; target: string }[] = [];
  const walk = (directory: string): void => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) {
        for (const match of readFileSync(path, 'utf8').matchAll(/(?:from|import)\s+'([^']+)'/g)) {
          const specifier = match[1]!;
          const target = specifier.startsWith('.') ? relative(ROOT, resolve(dirname(path), specifier)) : specifier;
          found.push({ file: relative(ROOT, path), target });
        }
      }
    }
  };
  walk(join(ROOT, folder));
  return found;
}

const violations = (folders: readonly string[], forbidden: RegExp): string[] =>
  folders.flatMap((folder) => importsOf(folder)).filter(({ target }) => forbidden.test(target)).map(({ file, target }) => `${file} → ${target}`);

describe('the import picture: dependencies point one way', () => {
  const DOMAIN = ['src/accounts', 'src/catalog', 'src/invocations', 'src/aggregates', 'src/domain', 'src/features'];

  it('no domain folder imports the wiring (composition, configuration) or the transport', () => {
    expect(violations(DOMAIN, /^src\/(composition|config|http|http-kit|demo)(\/|$)/)).toEqual([]);
  });

  it('no domain folder imports a read-model name: deciders and handlers never read projections', () => {
    expect(violations(DOMAIN, /^(projections|src\/projection-runner|src\/queries)(\/|$)/)).toEqual([]);
  });

  it('the runtime imports no store, transport, provider or framework', () => {
    expect(violations(['src/runtime'], /^(src\/(?!runtime)|projections|@nestjs|@anthropic-ai|better-sqlite3|@eventstore)/)).toEqual([]);
  });

  it('the event store knows no domain and no read models', () => {
    expect(violations(['src/event-store'], /^(src\/(accounts|catalog|invocations|features|composition|queries|http|http-kit)|projections)(\/|$)/)).toEqual([]);
  });

  it('read models know no transport', () => {
    expect(violations(['projections'], /^src\/(http|http-kit|composition)(\/|$)/)).toEqual([]);
  });

  it('the HTTP kit imports no feature: only the floors below it (config, domain, event store, projection runner)', () => {
    expect(violations(['src/http-kit'], /^(src\/(?!(http-kit|config|domain|event-store|projection-runner|runtime)(\/|$))|projections)/)).toEqual([]);
  });
});
