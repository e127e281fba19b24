import { readdirSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { Projection } from './projection.types';

/** What names a projection's module: `<name>.projection.ts` in the sources, `.js` once built. */
export const PROJECTION_FILE_SUFFIX = '.projection';

/**
 * The projections of one or more folders: every projection exported by each `*.projection` module
 * directly in them (subfolders are not searched), folder by folder, in file-name order. A projection
 * registers itself by being such a file (docs/architecture.md "Where does my change go"): the live
 * runner, `projections rebuild` and `audit verify` all take this list, and the rebuild's groups are
 * derived from it (groupProjections).
 *
 * TypeError when a `*.projection` module exports no projection (a misnamed file would otherwise be
 * skipped without a word); RangeError when two projections share a name.
 */
export function discoverProjections(...folders: readonly string[]): Projection[] {
  // The running code's own extension: `.ts` from the sources (jest, the require hook), `.js` built.
  const fileName = new RegExp(`^[^.].*\\${PROJECTION_FILE_SUFFIX}\\${extname(__filename)}$`);
  const found: Projection[] = [];
  const names = new Map<string, string>();
  for (const folder of folders) {
    for (const file of readdirSync(folder).filter((entry) => fileName.test(entry)).sort()) {
      const path = join(folder, file);
      const projections = projectionsExportedBy(path);
      if (projections.length === 0) throw new TypeError(`${path} exports no projection`);
      for (const projection of projections) {
        const other = names.get(projection.name);
        if (other !== undefined) throw new RangeError(`Two projections are named "${projection.name}": in ${other} and ${path}`);
        names.set(projection.name, path);
        found.push(projection);
      }
    }
  }
  return found;
}

/** The module's exported projections, each once, in the order of its exports. */
function projectionsExportedBy(path: string): Projection[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const exported = Object.values(require(path) as Record<string, unknown>);
  return [...new Set(exported.filter(isProjection))];
}

/** True for a value with a projection's shape: a name, a version, the types it handles and `apply`. */
export function isProjection(value: unknown): value is Projection {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<Projection>;
  return (
    typeof candidate.name === 'string' &&
    typeof candidate.version === 'number' &&
    Array.isArray(candidate.handles) &&
    typeof candidate.apply === 'function'
  );
}
