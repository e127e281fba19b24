import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const QUICKSTART = 'examples/quickstart/src/main.ts';

describe('The README’s embedding snippet is examples/quickstart, copied whole (issue 26, finding 9)', () => {
  it('holds the quickstart’s main.ts verbatim in the block after its marker', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const marker = `<!-- ${QUICKSTART} -->\n\`\`\`ts\n`;
    const start = readme.indexOf(marker);
    expect(start).toBeGreaterThan(-1);
    const body = readme.slice(start + marker.length);
    const snippet = body.slice(0, body.indexOf('```\n'));
    expect(snippet).toBe(readFileSync(join(ROOT, QUICKSTART), 'utf8'));
  });

  it('pins the same versions of the peer dependencies and TypeScript as the library builds with', () => {
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const example = JSON.parse(readFileSync(join(ROOT, 'examples/quickstart/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    const installed = (name: string): string => (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
    for (const [name, version] of Object.entries({ ...example.dependencies, ...example.devDependencies })) {
      expect({ name, version }).toEqual({ name, version: installed(name) });
      expect(root.devDependencies[name]).toBeDefined();
    }
  });
});
