/**
 * Who spent it (issue 33; docs/gateway.md "Who spent it"): a call's `metadata.user_id` and its
 * `x-ledger-tags` header are recorded on the invocation, bounded and opaque, never the body's text;
 * the usage statement groups by `user` and `tag` (JSON and CSV), and the invocation list filters by
 * them. Through the real service and Anthropic's SDK, against a local Messages API.
 */
import Anthropic, { BadRequestError } from '@anthropic-ai/sdk';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { MAX_CALL_TAG_CHARS, MAX_CALL_TAGS, MAX_CALL_USER_ID_CHARS } from '../../src/invocations/call-attribution';
import type { UsageStatement } from '../../src/queries/get-usage.query';
import { bearer, HttpLedger, TOKENS } from '../http/support/http-ledger';
import { MessagesApiServer, messageReply } from '../support/messages-api-server';
import { GATEWAY_KEY_NAME, GATEWAY_MODEL as MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

/** The prompt every call sends: it must appear in no event. */
const PROMPT = 'the secret prompt text 7f3a';
/** 1,000 × 3,000,000 + 10 × 15,000,000 millionths: each call's charge, in credits. */
const CHARGE = 3_150;
const DAY_MS = 86_400_000;

interface Listed {
  readonly invocationId: string;
  readonly state: string;
  readonly gateway?: { readonly userId?: string; readonly tags?: readonly string[] };
}

describe('who spent it: metadata.user_id and x-ledger-tags on each call, statements grouped and lists filtered by them (issue 33)', () => {
  let service: GatewayService;
  let upstream: MessagesApiServer;
  let ledger: HttpLedger;
  let client: Anthropic;
  const ids: Record<string, string> = {};
  // A period around the calls by the service's own clock, wide enough that a call at midnight is in it.
  const period = (): string => `from=${new Date(Date.now() - DAY_MS).toISOString().slice(0, 10)}&to=${new Date(Date.now() + DAY_MS).toISOString().slice(0, 10)}`;
  const list = async (query: string): Promise<{ invocations: Listed[]; nextCursor: string | null }> =>
    (await ledger.http().get(`/v1/organizations/acme/invocations?${query}`).set(bearer(TOKENS.acmeAdmin)).expect(200)).body;
  let teamId: string;
  const call = async (name: string, userId: string | undefined, tags: string | undefined, caller = client) => {
    upstream.reply(messageReply({ model: MODEL, usage: { input_tokens: 1_000, output_tokens: 10 } }));
    const { response } = await caller.messages
      .create(
        { model: MODEL, max_tokens: 1_024, messages: [{ role: 'user', content: PROMPT }], ...(userId === undefined ? {} : { metadata: { user_id: userId } }) },
        tags === undefined ? {} : { headers: { 'x-ledger-tags': tags } },
      )
      .withResponse();
    ids[name] = response.headers.get('llm-ledger-invocation-id')!;
    await settledView(ledger, ids[name]!);
  };

  beforeAll(async () => {
    service = await startGatewayService();
    ({ upstream, ledger } = service);
    client = service.client();
    await call('ann-both', 'user-ann', 'team-a, nightly');
    await call('ann-nightly', 'user-ann', 'nightly,nightly');
    await call('bob', 'user-bob', undefined);
    await call('nobody', undefined, undefined);
    // A key of a team: its calls are the team's (docs/gateway.md "Teams").
    const system = bearer(TOKENS.system);
    teamId = (await ledger.http().post('/v1/organizations/acme/teams').set(system).send({ name: 'payments' }).expect(200)).body.teamId;
    const teamKey = (await ledger.http().post('/v1/organizations/acme/gateway-keys').set(system).send({ name: 'payments-bot', teamId }).expect(200)).body.key as string;
    await call('team', undefined, undefined, new Anthropic({ baseURL: client.baseURL, apiKey: teamKey, maxRetries: 0 }));
  });
  afterAll(() => service.close());

  it('records the user and the tags (each once) on the invocation, and none of the body’s text; the body goes upstream unchanged', async () => {
    const view = await ledger.http().get(`/v1/invocations/${ids['ann-both']}`).set(bearer(TOKENS.acmeAdmin)).expect(200);
    expect(view.body.gateway).toEqual({ keyId: expect.any(String), keyName: GATEWAY_KEY_NAME, model: MODEL, userId: 'user-ann', tags: ['team-a', 'nightly'] });
    expect((await ledger.http().get(`/v1/invocations/${ids['ann-nightly']}`).set(bearer(TOKENS.acmeAdmin)).expect(200)).body.gateway.tags).toEqual(['nightly']);
    const nobody = (await ledger.http().get(`/v1/invocations/${ids.nobody}`).set(bearer(TOKENS.acmeAdmin)).expect(200)).body.gateway;
    expect(nobody).not.toHaveProperty('userId');
    expect(nobody).not.toHaveProperty('tags');
    const log = JSON.stringify((await ledger.app.get<EventStore>(EVENT_STORE).readAll()).map((event) => event.data));
    expect(log).toContain('user-ann');
    expect(log).not.toContain(PROMPT);
    expect(upstream.requests[0]!.body).toMatchObject({ metadata: { user_id: 'user-ann' } });
    expect(upstream.requests[0]!.headers).not.toHaveProperty('x-ledger-tags');
  });

  it('groups the usage statement by team, by user and by tag, a call with two tags in each of their rows, totals counting each call once', async () => {
    const statement = async (groupBy: string): Promise<UsageStatement> =>
      (await ledger.http().get(`/v1/organizations/acme/usage?${period()}&groupBy=${groupBy}`).set(bearer(TOKENS.acmeAdmin)).expect(200)).body;
    const byUser = await statement('user');
    expect(byUser.rows.map((row) => [row.userId, row.settled, row.credits])).toEqual([
      ['', 2, 2 * CHARGE],
      ['user-ann', 2, 2 * CHARGE],
      ['user-bob', 1, CHARGE],
    ]);
    expect(byUser.totals).toMatchObject({ settled: 5, credits: 5 * CHARGE });
    const byTag = await statement('tag');
    expect(byTag.rows.map((row) => [row.tag, row.settled, row.credits])).toEqual([
      ['', 3, 3 * CHARGE],
      ['nightly', 2, 2 * CHARGE],
      ['team-a', 1, CHARGE],
    ]);
    expect(byTag.totals).toMatchObject({ settled: 5, credits: 5 * CHARGE });
    const byTeam = await statement('team');
    expect(byTeam.rows.map((row) => [row.teamId, row.settled, row.credits])).toEqual([
      ['', 4, 4 * CHARGE],
      [teamId, 1, CHARGE],
    ]);
    // Rows are ordered by key id first; the two keys' ids sort as they may, so the rows are compared as a set.
    const all = await statement('key,team,user,tag');
    const rowsOf = (rows: readonly (readonly unknown[])[]) => rows.map((row) => JSON.stringify(row)).sort();
    expect(rowsOf(all.rows.map((row) => [row.keyName, row.teamId, row.userId, row.tag, row.settled]))).toEqual(
      rowsOf([
        [GATEWAY_KEY_NAME, '', '', '', 1],
        [GATEWAY_KEY_NAME, '', 'user-ann', 'nightly', 2],
        [GATEWAY_KEY_NAME, '', 'user-ann', 'team-a', 1],
        [GATEWAY_KEY_NAME, '', 'user-bob', '', 1],
        ['payments-bot', teamId, '', '', 1],
      ]),
    );
    const csv = await ledger.http().get(`/v1/organizations/acme/usage?${period()}&groupBy=user,tag`).set(bearer(TOKENS.acmeAdmin)).set('Accept', 'text/csv').expect(200);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]!.startsWith('userId,tag,credits,settled,')).toBe(true);
    expect(lines.slice(1).map((line) => line.split(',').slice(0, 4).join(','))).toEqual([
      `,,${2 * CHARGE},2`,
      `user-ann,nightly,${2 * CHARGE},2`,
      `user-ann,team-a,${CHARGE},1`,
      `user-bob,,${CHARGE},1`,
    ]);
  });

  it('filters the invocation list by user, by tag and by team, with the other filters and page by page', async () => {
    const idsOf = (page: { invocations: Listed[] }) => page.invocations.map((entry) => entry.invocationId);
    expect(idsOf(await list('user=user-ann'))).toEqual([ids['ann-nightly'], ids['ann-both']]);
    expect(idsOf(await list('tag=nightly'))).toEqual([ids['ann-nightly'], ids['ann-both']]);
    expect(idsOf(await list('tag=team-a&state=settled&user=user-ann'))).toEqual([ids['ann-both']]);
    expect(idsOf(await list('tag=nightly&user=user-bob'))).toEqual([]);
    expect(idsOf(await list('tag=nightly&state=refused'))).toEqual([]);
    expect(idsOf(await list('user=nobody-at-all'))).toEqual([]);
    expect(idsOf(await list(`team=${teamId}`))).toEqual([ids.team]);
    expect(idsOf(await list(`team=${teamId}&user=user-ann`))).toEqual([]);
    const first = await list('tag=nightly&limit=1');
    expect(idsOf(first)).toEqual([ids['ann-nightly']]);
    const second = await list(`tag=nightly&limit=1&cursor=${first.nextCursor}`);
    expect(idsOf(second)).toEqual([ids['ann-both']]);
    expect(second.nextCursor).toBeNull();
    // A cursor of the unfiltered list resumes no filtered one.
    const unfiltered = await list('limit=1');
    const refused = await ledger.http().get(`/v1/organizations/acme/invocations?tag=nightly&cursor=${unfiltered.nextCursor}`).set(bearer(TOKENS.acmeAdmin)).expect(400);
    expect(refused.body.fields).toHaveProperty('cursor');
    const tooLong = await ledger.http().get(`/v1/organizations/acme/invocations?tag=${'t'.repeat(MAX_CALL_TAG_CHARS + 1)}`).set(bearer(TOKENS.acmeAdmin)).expect(400);
    expect(tooLong.body.fields).toHaveProperty('tag');
  });

  it.each([
    ['a tag with a space', 'team a'],
    ['a tag longer than MAX_CALL_TAG_CHARS', 't'.repeat(MAX_CALL_TAG_CHARS + 1)],
    ['more than MAX_CALL_TAGS tags', Array.from({ length: MAX_CALL_TAGS + 1 }, (_, i) => `t${i}`).join(',')],
  ])('refuses %s in x-ledger-tags: 400 invalid_request_error naming the header, in Anthropic’s shape, nothing sent or held', async (_name, tags) => {
    const before = upstream.requests.length;
    const error = await client.messages.create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: PROMPT }] }, { headers: { 'x-ledger-tags': tags } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/^x-ledger-tags: /) } });
    expect(upstream.requests.length).toBe(before);
  });

  it('refuses a metadata.user_id longer than MAX_CALL_USER_ID_CHARS, or not a string, naming the field', async () => {
    for (const userId of ['u'.repeat(MAX_CALL_USER_ID_CHARS + 1), 42]) {
      const error = await client.messages
        .create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: PROMPT }], metadata: { user_id: userId as string } })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(BadRequestError);
      expect((error as BadRequestError).error).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringMatching(/^metadata\.user_id: /) } });
    }
    const balance = await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system)).expect(200);
    expect(balance.body).toMatchObject({ held: 0, charged: 5 * CHARGE });
  });
});
