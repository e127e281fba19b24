/**
 * Who reads the gateway's rate card (docs/gateway.md "The rate card"): operators and auditors all of
 * it; an organization's administrator the models enabled now, every version of each, so they can size
 * a key's limit; a member nothing. Issue 33: an org admin got 403 and could not size a key.
 */
import { bearer, HttpLedger, startHttpLedger, TOKENS } from '../http/support/http-ledger';

const PRICES = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300 };

describe('org admins read the rate card of the models their keys may use (issue 33; docs/gateway.md "The rate card")', () => {
  let ledger: HttpLedger;
  const price = (model: string, enabled: boolean, inputPerMTok = PRICES.inputPerMTok) =>
    ledger
      .http()
      .put(`/v1/gateway/models/${model}`)
      .set(bearer(TOKENS.system))
      .send({ prices: { ...PRICES, inputPerMTok }, maxOutputTokens: 128_000, attemptTimeoutMs: 600_000, enabled })
      .expect(200);

  beforeAll(async () => {
    ledger = await startHttpLedger();
    await price('claude-enabled', true);
    await price('claude-enabled', true, 4_000);
    await price('claude-withdrawn', true);
    await price('claude-withdrawn', false);
    await price('claude-never-enabled', false);
  });
  afterAll(() => ledger.close());

  it('lists for an org admin every enabled model with all its versions, and no model that is not enabled now', async () => {
    const { body } = await ledger.http().get('/v1/gateway/models').set(bearer(TOKENS.acmeAdmin)).expect(200);
    expect(body.models.map((model: { model: string }) => model.model)).toEqual(['claude-enabled']);
    expect(body.models[0].versions.map((version: { version: number; prices: { inputPerMTok: number } }) => [version.version, version.prices.inputPerMTok])).toEqual([
      [1, 3_000],
      [2, 4_000],
    ]);
    await ledger.http().get('/v1/gateway/models/claude-enabled').set(bearer(TOKENS.globexAdmin)).expect(200);
  });

  it('answers an org admin 404 for a model not enabled now, as a key’s caller is answered', async () => {
    for (const model of ['claude-withdrawn', 'claude-never-enabled', 'claude-unknown']) {
      const { body } = await ledger.http().get(`/v1/gateway/models/${model}`).set(bearer(TOKENS.acmeAdmin)).expect(404);
      expect(JSON.stringify(body)).toContain(model);
    }
  });

  it('still shows operators and auditors every model, disabled ones included, and members nothing (403)', async () => {
    for (const token of [TOKENS.system, TOKENS.auditor]) {
      const { body } = await ledger.http().get('/v1/gateway/models').set(bearer(token)).expect(200);
      expect(body.models.map((model: { model: string }) => model.model)).toEqual(['claude-enabled', 'claude-never-enabled', 'claude-withdrawn']);
      await ledger.http().get('/v1/gateway/models/claude-withdrawn').set(bearer(token)).expect(200);
    }
    await ledger.http().get('/v1/gateway/models').set(bearer(TOKENS.acmeMember)).expect(403);
    await ledger.http().get('/v1/gateway/models/claude-enabled').set(bearer(TOKENS.acmeMember)).expect(403);
    await ledger.http().put('/v1/gateway/models/claude-enabled').set(bearer(TOKENS.acmeAdmin)).send({ prices: PRICES, maxOutputTokens: 1, attemptTimeoutMs: 1, enabled: true }).expect(403);
  });
});
