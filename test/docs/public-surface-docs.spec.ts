import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(__dirname, '..', '..');
const INDEX = join(ROOT, 'src', 'index.ts');

/** Every name `src/index.ts` exports, read from its syntax (it re-exports explicit lists only). */
function exportedNames(): string[] {
  const source = ts.createSourceFile(INDEX, readFileSync(INDEX, 'utf8'), ts.ScriptTarget.Latest, true);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement)) continue;
    const clause = statement.exportClause;
    // `export *` would export names no list shows, which this check could not see.
    if (clause === undefined || !ts.isNamedExports(clause)) throw new Error(`src/index.ts: ${statement.getText()} is not an explicit list`);
    for (const element of clause.elements) names.push(element.name.text);
  }
  return names;
}

const mentions = (text: string, name: string): boolean => new RegExp(`(^|[^A-Za-z0-9_$])${name.replace(/\$/g, '\\$')}([^A-Za-z0-9_$]|$)`).test(text);

describe('docs/embedding.md names everything src/index.ts exports', () => {
  const names = exportedNames();
  const embedding = readFileSync(join(ROOT, 'docs', 'embedding.md'), 'utf8');

  it('reads the exports of src/index.ts', () => {
    // Guards the check itself: a parse that found nothing would pass every name.
    expect(names.length).toBeGreaterThan(100);
    expect(names).toEqual(expect.arrayContaining(['LedgerModule', 'RunOperationCommand', 'GetExplanationQuery', 'InvocationSettled', 'ScriptedProvider']));
  });

  it('mentions each exported name', () => {
    expect(names.filter((name) => !mentions(embedding, name))).toEqual([]);
  });

  it('sees a name the page leaves out', () => {
    expect(mentions('`LedgerModule.forRoot`', 'LedgerModule')).toBe(true);
    expect(mentions('`LedgerModuleOptions`', 'LedgerModule')).toBe(false);
  });
});

describe('the project documents itself: no page points outside the repository', () => {
  const pages = [join(ROOT, 'README.md'), ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join(ROOT, 'docs', name))];

  it('has the docs pages the README links', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const page of ['rules.md', 'lifecycle.md', 'http.md', 'embedding.md']) {
      expect(pages).toContain(join(ROOT, 'docs', page));
      expect(readme).toContain(`docs/${page}`);
    }
  });

  it('never refers to the shared folder the specification came from', () => {
    const outside = pages.filter((page) => /\.\.\/shared|\/work\/|shared\/SPEC/.test(readFileSync(page, 'utf8')));
    expect(outside).toEqual([]);
  });

  it('links only to pages that exist', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target] of readFileSync(page, 'utf8').matchAll(/\]\(([^)#\s]+\.md)(#[^)]*)?\)/g)) {
        if (!/^https?:/.test(target!) && !existsSync(resolve(dirname(page), target!))) broken.push(`${page} → ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('the code cites the repository’s own documents, never the specification it came from', () => {
  // Built from parts, so this file does not match itself.
  const OUTSIDE_CITATION = new RegExp(['SPEC' + ' §', 'STYLE' + '\\.md', '\\.\\./shared/'].join('|'));
  const FOLDERS = ['src', 'projections', 'test', 'console/src', 'bench', 'examples/quickstart', 'examples/support-desk/src', 'examples/support-desk/test'];

  it('cites no section of the specification, its style guide or its shared folder in src/, projections/, test/, console/src/, bench/ or examples/', () => {
    const files = FOLDERS.flatMap((folder) =>
      readdirSync(join(ROOT, folder), { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile() && /\.(ts|tsx|js|md)$/.test(entry.name) && !entry.parentPath.includes('node_modules'))
        .map((entry) => join(entry.parentPath, entry.name)),
    );
    expect(files.length).toBeGreaterThan(500);
    expect(files.filter((file) => OUTSIDE_CITATION.test(readFileSync(file, 'utf8'))).map((file) => relative(ROOT, file))).toEqual([]);
  });
});
