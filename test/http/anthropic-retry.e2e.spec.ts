import { DEMO_OPERATION_ID } from '../../src/features/demo-arithmetic/demo-arithmetic.feature';
import { errorReply, MessagesApiServer, messageReply, textBlock, toolUseBlock } from '../support/messages-api-server';
import { bearer, HttpLedger, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

const API_KEY = 'sk-ant-test-http-key';

describe('demo.arithmetic over HTTP through the real Anthropic SDK and a local Messages API: a 529, then success (BR-CAP-PFM-LLM-002-05, BR-CAP-PFM-LLM-002-07)', () => {
  let server: MessagesApiServer;
  let ledger: HttpLedger;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
    ledger = await startHttpLedger({ env: { ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_BASE_URL: server.baseURL } });
  });

  afterEach(async () => {
    await ledger.close();
    await server.close();
  });

  it('retries the overloaded turn after a real wait, settles the answer, and shows every attempt at /attempts', async () => {
    const system = bearer(TOKENS.system);
    await ledger
      .http()
      .put(`/v1/operations/${DEMO_OPERATION_ID}/publications`)
      .set(system)
      .send(
        publicationBody({
          routing: { provider: 'anthropic', model: 'claude-test-model' },
          prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300 },
        }),
      )
      .expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(system).send({ credits: 10_000, reason: 'plan', idempotencyKey: 'plan' }).expect(200);
    server.reply(
      errorReply(529, 'overloaded_error', 'Overloaded'),
      messageReply({
        stopReason: 'tool_use',
        content: [textBlock('Let me compute it.'), toolUseBlock('toolu_calc', 'calculate', { expression: '6*7' })],
        usage: { input_tokens: 1_000, output_tokens: 40 },
      }),
      messageReply({
        stopReason: 'tool_use',
        content: [toolUseBlock('toolu_answer', 'submit_answer', { value: 42 })],
        usage: { input_tokens: 1_200, output_tokens: 20 },
      }),
    );

    const response = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.acmeMember))
      .send({ operationId: DEMO_OPERATION_ID, organizationId: 'acme', input: { question: 'What is 6*7?' } });
    expect(response.status).toBe(200);
    // 3,000 per million input and 15,000 per million output: ceil(3 + 0.6) = 4, then ceil(3.6 + 0.3) = 4.
    expect(response.body).toMatchObject({ state: 'settled', outcome: 'completed', turnsUsed: 2, toolCallsUsed: 1, charge: 8 });

    expect(server.requests).toHaveLength(3);
    for (const request of server.requests) {
      expect(request.path).toMatch(/^\/v1\/messages/);
      // The key from ANTHROPIC_API_KEY, in whichever header this SDK version uses.
      expect(`${request.headers.authorization ?? ''} ${request.headers['x-api-key'] ?? ''}`).toContain(API_KEY);
    }

    const history = await ledger.http().get(`/v1/invocations/${response.body.invocationId}/attempts`).set(bearer(TOKENS.acmeMember)).expect(200);
    const attempts = history.body.attempts as Array<Record<string, unknown>>;
    expect(attempts.map(({ turn, retry, classification, httpStatus, priceCredits }) => ({ turn, retry, classification, httpStatus, priceCredits }))).toEqual([
      { turn: 1, retry: 0, classification: 'overloaded', httpStatus: 529, priceCredits: 0 },
      { turn: 1, retry: 1, classification: 'ok', httpStatus: 200, priceCredits: 4 },
      { turn: 2, retry: 0, classification: 'ok', httpStatus: 200, priceCredits: 4 },
    ]);
    expect(attempts[1]!.waitBeforeMs).toBeGreaterThanOrEqual(500);
    expect(attempts[0]!.usage).toBeUndefined();
    expect(attempts[1]).toMatchObject({ model: 'claude-test-model', providerRequestId: 'req_fake_0002', usage: { inputTokens: 1_000, outputTokens: 40 } });
    expect(history.body).toMatchObject({ attemptCount: 3, attemptsTruncated: false, priceTotalCredits: 8 });
  });
});
