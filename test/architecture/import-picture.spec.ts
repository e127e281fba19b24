import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The import picture of docs/architecture.md, checked: every folder of src/ (and projections/) is a
 * room on a floor, an import never points up a floor, and no two folders or files import each other,
 * directly or round a circle. A new folder fails here until it is given a floor, here and in the
 * page's picture.
 */

const ROOT = resolve(__dirname, '..', '..');

/** The floors, bottom first. A room may import its own floor and those below it, never one above. */
const FLOORS: readonly { readonly floor: string; readonly rooms: readonly string[] }[] = [
  { floor: 'runtime', rooms: ['src/runtime', 'src/worker'] },
  { floor: 'foundations', rooms: ['src/domain', 'src/event-store', 'src/upcasters', 'src/projection-runner', 'src/answer-store', 'src/config'] },
  { floor: 'core', rooms: ['src/aggregates', 'src/catalog', 'src/accounts', 'src/invocations', 'src/features', 'src/providers', 'src/ledger-events'] },
  { floor: 'http kit', rooms: ['src/http-kit'] },
  {
    floor: 'features',
    rooms: ['projections', 'src/queries', 'src/http', 'src/alerts', 'src/webhooks', 'src/observability', 'src/gateway', 'src/demo', 'src/cli', 'src/reconcile'],
  },
  { floor: 'composition', rooms: ['src/composition', 'src/logging', 'src/console', 'src/simulation', 'src'] },
];

interface Import {
  readonly file: string;
  /** The file imported (relative specifiers), or the package's specifier. */
  readonly target: string;
  readonly relative: boolean;
}

const SPECIFIER = /(?:\bfrom|\bimport)\s*\(?\s*['"]([^'"]+)['"]/g;

function sourceFiles(folder: string): string[] {
  const found: string[] = [];
  const walk = (directory: string): void => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) found.push(relative(ROOT, path));
    }
  };
  walk(join(ROOT, folder));
  return found;
}

/** The file a relative specifier names: `x.ts`, or `x/index.ts` for a folder. */
function resolveFile(from: string, specifier: string): string {
  const base = relative(ROOT, resolve(ROOT, dirname(from), specifier));
  const candidates = [`${base}.ts`, join(base, 'index.ts'), base];
  const found = candidates.find((candidate) => candidate.endsWith('.ts') && existsSync(join(ROOT, candidate)));
  if (found === undefined) throw new Error(`${from} imports ${specifier}, which is no .ts file`);
  return found;
}

/** Every import of every .ts file below `folders`: `from '…'`, `import '…'`, `import('…')`, `export … from '…'`. */
function importsOf(folders: readonly string[]): Import[] {
  return folders.flatMap((folder) =>
    sourceFiles(folder).flatMap((file) =>
      [...readFileSync(join(ROOT, file), 'utf8').matchAll(SPECIFIER)].map(([, specifier]) =>
        specifier!.startsWith('.') ? { file, target: resolveFile(file, specifier!), relative: true } : { file, target: specifier!, relative: false },
      ),
    ),
  );
}

/** The room a file is in: its folder right under src/ (`src` for the files at its top), or projections. */
function roomOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'projections') return 'projections';
  return parts.length === 2 ? 'src' : `${parts[0]}/${parts[1]}`;
}

/**
 * The strongly connected components of more than one node (Tarjan): each is a set of nodes that reach
 * each other, i.e. one or more cycles. A node that imports itself is not a cycle here.
 */
function cyclesOf(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) components.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return components;
}

function graphOf(edges: readonly (readonly [string, string])[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const [from, to] of edges) {
    if (!graph.has(from)) graph.set(from, new Set());
    if (!graph.has(to)) graph.set(to, new Set());
    if (from !== to) graph.get(from)!.add(to);
  }
  return graph;
}

const ALL = importsOf(['src', 'projections']);
const LOCAL = ALL.filter((entry) => entry.relative);
const FLOOR_OF = new Map(FLOORS.flatMap(({ rooms }, floor) => rooms.map((room) => [room, floor] as const)));
const floorName = (room: string): string => FLOORS[FLOOR_OF.get(room)!]!.floor;

/** The imports, as `file → target`, of files below `folders` whose target matches `forbidden`. */
const violations = (folders: readonly string[], forbidden: RegExp): string[] =>
  importsOf(folders)
    .filter(({ target }) => forbidden.test(target))
    .map(({ file, target }) => `${file} → ${target}`);

describe('the cycle finder the picture relies on', () => {
  it('finds a circle of three, a two-file circle beside it, and nothing in a graph without one', () => {
    const circles = cyclesOf(graphOf([['a', 'b'], ['b', 'c'], ['c', 'a'], ['c', 'd'], ['e', 'f'], ['f', 'e'], ['g', 'g']]));
    expect(circles.sort()).toEqual([['a', 'b', 'c'], ['e', 'f']]);
    expect(cyclesOf(graphOf([['a', 'b'], ['b', 'c'], ['a', 'c'], ['d', 'd']]))).toEqual([]);
  });
});

describe('the import picture (docs/architecture.md): rooms on floors, every arrow level or down, no cycle', () => {
  it('every folder of src/ and projections/ is a room with a floor, and every room named exists', () => {
    const rooms = new Set(sourceFiles('src').concat(sourceFiles('projections')).map(roomOf));
    expect([...rooms].filter((room) => !FLOOR_OF.has(room)).sort()).toEqual([]);
    expect([...FLOOR_OF.keys()].filter((room) => !rooms.has(room)).sort()).toEqual([]);
  });

  it('no import points up a floor', () => {
    const upward = LOCAL.filter(({ file, target }) => FLOOR_OF.get(roomOf(target))! > FLOOR_OF.get(roomOf(file))!).map(
      ({ file, target }) => `${file} (${floorName(roomOf(file))}) → ${target} (${floorName(roomOf(target))})`,
    );
    expect(upward).toEqual([]);
  });

  it('no cycle between folders: no two rooms import each other, directly or round a circle', () => {
    const rooms = graphOf(LOCAL.map(({ file, target }) => [roomOf(file), roomOf(target)] as const));
    const arrows = (circle: readonly string[]): string[] =>
      LOCAL.filter(({ file, target }) => roomOf(file) !== roomOf(target) && circle.includes(roomOf(file)) && circle.includes(roomOf(target))).map(
        ({ file, target }) => `${file} → ${target}`,
      );
    expect(cyclesOf(rooms).map((circle) => ({ circle, arrows: arrows(circle) }))).toEqual([]);
  });

  it('no cycle between files', () => {
    expect(cyclesOf(graphOf(LOCAL.map(({ file, target }) => [file, target] as const)))).toEqual([]);
  });
});

describe('the import picture: what each floor may not know', () => {
  const DOMAIN = ['src/accounts', 'src/catalog', 'src/invocations', 'src/aggregates', 'src/domain', 'src/features'];

  it('the HTTP kit imports no feature: only the floors below it (config, domain, event store, projection runner, runtime)', () => {
    expect(violations(['src/http-kit'], /^(src\/(?!(http-kit|config|domain|event-store|projection-runner|runtime)(\/|$))|projections)/)).toEqual([]);
  });

  it('no domain folder imports the wiring (composition, configuration), the transport or observability', () => {
    expect(violations(DOMAIN, /^src\/(composition|config|http|http-kit|demo|observability)(\/|$)/)).toEqual([]);
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

  it('the configuration imports no feature: features read their own (webhooks, observability)', () => {
    expect(violations(['src/config'], /^(src\/(?!(config|domain|event-store|projection-runner|runtime)(\/|$))|projections)/)).toEqual([]);
  });

  it('read models know no transport', () => {
    expect(violations(['projections'], /^src\/(http|http-kit|composition)(\/|$)/)).toEqual([]);
  });
});

describe('the import picture: one home for a route and for a handler (docs/architecture.md "where does my change go")', () => {
  const FEATURE_FLOOR = FLOORS.findIndex(({ floor }) => floor === 'features');
  const files = sourceFiles('src').concat(sourceFiles('projections'));
  const declaring = (decorator: RegExp): string[] => files.filter((file) => decorator.test(readFileSync(join(ROOT, file), 'utf8')));
  /** Which files import `target`, as `importer → target`. */
  const importersOf = (targets: readonly string[]): (readonly [string, string])[] =>
    LOCAL.filter(({ target }) => targets.includes(target)).map(({ file, target }) => [file, target] as const);

  it('a controller is a *.controller.ts in a room of the features floor: never in the core, the kit or the composition', () => {
    const controllers = declaring(/@Controller\(/);
    expect(controllers.length).toBeGreaterThan(0);
    expect(controllers.filter((file) => !file.endsWith('.controller.ts') || FLOOR_OF.get(roomOf(file)) !== FEATURE_FLOOR)).toEqual([]);
  });

  it('a controller is mounted by its own room\'s HTTP module (*-http.module.ts) and imported by nothing else', () => {
    const strays = importersOf(declaring(/@Controller\(/)).filter(([file, target]) => roomOf(file) !== roomOf(target) || !file.endsWith('-http.module.ts'));
    expect(strays.map(([file, target]) => `${file} → ${target}`)).toEqual([]);
  });

  it('a command, query or event handler is provided by a module of its own room, never listed by the composition', () => {
    const handlers = declaring(/@(CommandHandler|QueryHandler|EventsHandler)\(/);
    expect(handlers.length).toBeGreaterThan(0);
    const listedAtHome = (handler: string): boolean =>
      importersOf([handler]).some(([file]) => roomOf(file) === roomOf(handler) && file.endsWith('.module.ts'));
    expect(handlers.filter((handler) => !listedAtHome(handler))).toEqual([]);
    expect(violations(['src/composition'], /\.handlers?(\.ts)?$|\.query(\.ts)?$/)).toEqual([]);
  });

  it('one @Global module, the foundations: every other module imports what it uses', () => {
    expect(declaring(/@Global\(\)/)).toEqual(['src/composition/ledger-foundations.module.ts']);
  });
});
