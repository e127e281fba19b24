import type { Projection } from './projection.types';

/**
 * Where a worker thread loads projections from, since functions cannot be posted to it: a module
 * `require` resolves, and the name of its export holding a `Projection[]`.
 */
export interface ProjectionsModule {
  /** Absolute path of the module (its extension may be left out). */
  readonly path: string;
  readonly exportName: string;
}

/** The projection list a ProjectionsModule names; TypeError when the export is not a list. */
export function loadProjections(module: ProjectionsModule): readonly Projection[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = (require(module.path) as Record<string, unknown>)[module.exportName];
  if (!Array.isArray(loaded)) {
    throw new TypeError(`${module.path} exports no projection list named ${module.exportName}`);
  }
  return loaded as readonly Projection[];
}
