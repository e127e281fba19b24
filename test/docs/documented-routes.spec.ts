import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHttpLedger, type HttpLedger } from '../http/support/http-ledger';

const ROOT = join(__dirname, '..', '..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join('docs', name))];
/** Routes the pages name that are another service's: Anthropic's Admin API usage report. */
const OTHER_SERVICES = new Set(['GET /v1/organizations/usage_report/messages']);

/** Every `METHOD /v1/…` a page names in code, without its query: `GET /v1/streams/invocation-<id>`. */
function documentedRoutes(): Array<{ page: string; route: string }> {
  return PAGES.flatMap((page) =>
    [...readFileSync(join(ROOT, page), 'utf8').matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\/v1\/[^`\s?]*)[^`]*`/g)].map((match) => ({ page, route: `${match[1]} ${match[2]}` })),
  );
}

/** A documented path segment stands for any value when it holds a placeholder (`:id`, `<id>`, `{id}`, `$ID`). */
function matches(documented: string, route: string): boolean {
  const [method, path] = documented.split(' ') as [string, string];
  const [routeMethod, routePath] = route.split(' ') as [string, string];
  const segments = path.replace(/\/$/, '').split('/');
  const routeSegments = routePath.split('/');
  if (method !== routeMethod || segments.length !== routeSegments.length) return false;
  return segments.every((segment, index) => /[:<{$]/.test(segment) || /^\{.+\}$/.test(routeSegments[index]!) || segment === routeSegments[index]);
}

describe('The pages name only routes the API has (issue 26, finding 7: `GET /v1/streams` was a 404)', () => {
  let ledger: HttpLedger;
  let routes: string[];

  beforeAll(async () => {
    ledger = await startHttpLedger();
    const document = (await ledger.http().get('/docs-json').expect(200)).body as { paths: Record<string, Record<string, unknown>> };
    routes = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
  });

  afterAll(() => ledger?.close());

  it('finds every `METHOD /v1/…` of README.md and docs/*.md in the OpenAPI document', () => {
    const documented = documentedRoutes();
    expect(documented.length).toBeGreaterThan(20);
    const missing = documented.filter(({ route }) => !OTHER_SERVICES.has(route) && !routes.some((candidate) => matches(route, candidate)));
    expect(missing).toEqual([]);
  });

  it('declares the bearer scheme without a JWT format: the tokens are opaque (issue 26, finding 8)', async () => {
    const document = (await ledger.http().get('/docs-json').expect(200)).body as { components: { securitySchemes: Record<string, Record<string, unknown>> } };
    expect(document.components.securitySchemes).toEqual({ bearer: { type: 'http', scheme: 'bearer', description: expect.stringContaining('opaque') } });
  });
});
