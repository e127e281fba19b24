/**
 * Issue 24, finding 5 (the invocation list took another organization's cursor while the ledger list
 * refused it): every paginated list binds its cursor to the list, the organization and the filters that
 * made it (docs/http.md "Routes"), so a cursor used anywhere else is a 400 naming `cursor`.
 */
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from './support/http-ledger';

interface List {
  readonly name: string;
  /** The list's path for an organization. */
  readonly path: (organizationId: string) => string;
  /** Filters it is read with, and other filters a cursor of it must not resume. */
  readonly filters: string;
  readonly otherFilters: readonly string[];
  /** Where the page's items are in the answer. */
  readonly items: string;
}

/** Every list the API pages with a cursor. */
const LISTS: readonly List[] = [
  { name: 'invocations', path: (id) => `/v1/organizations/${id}/invocations`, filters: 'operationId=demo.arithmetic', otherFilters: ['', 'state=settled', 'operationId=demo.other', 'from=2020-01-01T00:00:00Z'], items: 'invocations' },
  { name: 'ledger', path: (id) => `/v1/organizations/${id}/ledger`, filters: 'order=newest', otherFilters: ['', 'order=oldest'], items: 'entries' },
];

describe('issue 24, finding 5: a cursor of another list, organization or filters is refused with 400 on every list', () => {
  let ledger: HttpLedger;
  const cursors = new Map<string, string>();

  beforeAll(async () => {
    ledger = await startHttpLedger();
    const system = bearer(TOKENS.system);
    await ledger.http().put('/v1/operations/demo.arithmetic/publications').set(system).send(publicationBody()).expect(200);
    for (const organizationId of ['acme', 'globex']) {
      await ledger.http().post(`/v1/organizations/${organizationId}/grants`).set(system).send({ credits: 50_000, reason: 'plan', idempotencyKey: 'seed' }).expect(200);
      for (let run = 0; run < 3; run += 1) {
        await ledger.http().post('/v1/invocations').set(system).send({ operationId: 'demo.arithmetic', organizationId, input: { question: 'What is 6*7?' } }).expect(200);
      }
    }
    for (const list of LISTS) {
      const page = await ledger.http().get(`${list.path('acme')}?limit=1&${list.filters}`).set(system).expect(200);
      expect(typeof page.body.nextCursor).toBe('string');
      cursors.set(list.name, page.body.nextCursor as string);
    }
  }, 60_000);

  afterAll(() => ledger.close());

  const read = (path: string) => ledger.http().get(path).set(bearer(TOKENS.system));
  const expectRefused = (response: { status: number; body: Record<string, unknown> }): void => {
    expect({ status: response.status, fields: Object.keys((response.body.fields ?? {}) as object), code: response.body.code }).toEqual({ status: 400, fields: ['cursor'], code: 'invalid_request' });
  };

  it.each(LISTS.map((list) => [list.name, list] as const))('%s: its own cursor, with the same filters, resumes the next page', async (_name, list) => {
    const response = await read(`${list.path('acme')}?limit=1&${list.filters}&cursor=${cursors.get(list.name)}`);
    expect(response.status).toBe(200);
    expect((response.body[list.items] as unknown[]).length).toBe(1);
  });

  it.each(LISTS.map((list) => [list.name, list] as const))('%s: refuses its cursor on another organization’s list', async (_name, list) => {
    expectRefused(await read(`${list.path('globex')}?${list.filters}&cursor=${cursors.get(list.name)}`));
  });

  it.each(LISTS.map((list) => [list.name, list] as const))('%s: refuses its cursor read with other filters', async (_name, list) => {
    for (const filters of list.otherFilters) expectRefused(await read(`${list.path('acme')}?${filters}&cursor=${cursors.get(list.name)}`));
  });

  it.each(LISTS.flatMap((from) => LISTS.filter((to) => to !== from).map((to) => [from.name, to.name, from, to] as const)))(
    'a cursor of %s is refused by %s',
    async (_from, _to, from, to) => {
      expectRefused(await read(`${to.path('acme')}?${to.filters}&cursor=${cursors.get(from.name)}`));
    },
  );
});
