import { InvalidFeatureInputError, ScriptedProvider, scriptedToolUse, type OperationFeature, type Usage } from 'llm-ledger';

export const TRIAGE_OPERATION_ID = 'support.triage-ticket';
export const QUEUES = ['billing', 'hardware', 'accounts'] as const;

/** What the desk knows about its customers and its knowledge base (a real app would ask its services). */
const CUSTOMERS: Record<string, { readonly plan: string }> = { 'cust-7': { plan: 'enterprise' } };
const ARTICLES: Record<string, string> = { printer: 'KB-12: printers are handled by the hardware queue' };

const usage = (inputTokens: number, outputTokens: number): Usage => ({
  inputTokens,
  outputTokens,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  cacheReadTokens: 0,
  webSearchRequests: 0,
});

/**
 * `support.triage-ticket`: the model may look the customer up and search the knowledge base, then
 * answers with `submit_triage({ queue, priority })`; the judge accepts a known queue only.
 */
export const triageFeature: OperationFeature = {
  operationId: TRIAGE_OPERATION_ID,
  answerRetentionMs: 10 * 60 * 1_000,
  prepare(input: unknown) {
    const { ticket, customerId } = (input ?? {}) as { ticket?: unknown; customerId?: unknown };
    if (typeof ticket !== 'string' || ticket.length === 0) throw new InvalidFeatureInputError('input.ticket', 'must be a non-empty string');
    if (typeof customerId !== 'string') throw new InvalidFeatureInputError('input.customerId', 'must be a string');
    return {
      system: [{ type: 'text', text: 'You triage support tickets into a queue with a priority.', stable: true }],
      messages: [{ role: 'user', content: [{ type: 'text', text: `Customer ${customerId}: ${ticket}` }] }],
      tools: [
        {
          name: 'lookup_customer',
          description: 'The customer’s plan.',
          inputSchema: { type: 'object', properties: { customerId: { type: 'string' } }, required: ['customerId'] },
          effect: 'read',
          handler: (args: { customerId: string }) => JSON.stringify(CUSTOMERS[args.customerId] ?? { plan: 'unknown' }),
        },
        {
          name: 'search_kb',
          description: 'Searches the knowledge base.',
          inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
          effect: 'read',
          handler: (args: { query: string }) => ARTICLES[args.query] ?? 'no article',
        },
      ],
      answerTool: {
        name: 'submit_triage',
        description: 'Submits the queue and priority.',
        inputSchema: {
          type: 'object',
          properties: { queue: { type: 'string' }, priority: { type: 'string', enum: ['low', 'normal', 'high'] } },
          required: ['queue', 'priority'],
        },
        judge: (answer: unknown) =>
          (QUEUES as readonly string[]).includes((answer as { queue: string }).queue)
            ? { accepted: true }
            : { accepted: false, feedback: `queue must be one of ${QUEUES.join(', ')}` },
      },
    };
  },
  // Offline: look the customer up, search the knowledge base, then submit.
  scriptedModel: () =>
    new ScriptedProvider([
      scriptedToolUse(
        [
          { id: 'c1', name: 'lookup_customer', input: { customerId: 'cust-7' } },
          { id: 'k1', name: 'search_kb', input: { query: 'printer' } },
        ],
        { usage: usage(400, 40) },
      ),
      scriptedToolUse([{ id: 's1', name: 'submit_triage', input: { queue: 'hardware', priority: 'high' } }], { usage: usage(600, 30) }),
    ]),
};
