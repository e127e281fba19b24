/**
 * The gateway's routes in the OpenAPI document: a pass-through under a tag of their own, whose
 * request and answer schemas are Anthropic's (free-form objects, described in a sentence), and whose
 * every error is declared in Anthropic's error shape, not the ledger API's.
 */
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import type { OpenApiSchema } from '../support/openapi-document.types';
import { startGateway, type GatewayApp } from './support/gateway-app';

interface Operation {
  readonly tags?: string[];
  readonly summary?: string;
  readonly description?: string;
  readonly parameters?: { name: string; in: string }[];
  readonly requestBody?: { content: Record<string, { schema: OpenApiSchema & { additionalProperties?: unknown; description?: string } }> };
  readonly responses: Record<string, { content?: Record<string, { schema: OpenApiSchema }> }>;
}

describe('the OpenAPI document describes the gateway’s routes as a pass-through of Anthropic’s API (docs/gateway.md)', () => {
  let gateway: GatewayApp;
  let paths: Record<string, Record<string, Operation>>;
  let schemas: Record<string, OpenApiSchema>;

  beforeAll(async () => {
    const accounting = new InMemoryGatewayAccounting({ keys: [], models: [], credits: {} });
    gateway = await startGateway({ accounting, upstreamURL: 'http://127.0.0.1:9' });
    const document = (await (await fetch(`http://127.0.0.1:${gateway.port}/docs-json`)).json()) as { paths: typeof paths; components: { schemas: typeof schemas } };
    paths = document.paths;
    schemas = document.components.schemas;
  });

  afterAll(() => gateway.close());

  const gatewayOperations = (): [string, Operation][] =>
    Object.entries(paths)
      .filter(([path]) => path.startsWith('/anthropic'))
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => [`${method.toUpperCase()} ${path}`, operation] as [string, Operation]));

  it('lists the routes under their own tag, Message Batches’ included, and not the catch-all that answers 404', () => {
    expect(gatewayOperations().map(([route]) => route).sort()).toEqual([
      'DELETE /anthropic/v1/messages/batches/{batchId}',
      'GET /anthropic/v1/messages/batches',
      'GET /anthropic/v1/messages/batches/{batchId}',
      'GET /anthropic/v1/messages/batches/{batchId}/results',
      'GET /anthropic/v1/models',
      'GET /anthropic/v1/models/{model}',
      'POST /anthropic/v1/messages',
      'POST /anthropic/v1/messages/batches',
      'POST /anthropic/v1/messages/batches/{batchId}/cancel',
      'POST /anthropic/v1/messages/count_tokens',
    ]);
    for (const [, operation] of gatewayOperations()) expect(operation.tags).toEqual(['Anthropic gateway']);
  });

  it('takes Anthropic’s request as a free-form object, described in a sentence without a link', () => {
    for (const route of ['POST /anthropic/v1/messages', 'POST /anthropic/v1/messages/count_tokens']) {
      const operation = Object.fromEntries(gatewayOperations())[route]!;
      const schema = operation.requestBody!.content['application/json']!.schema;
      expect({ route, type: schema.type, additionalProperties: schema.additionalProperties }).toEqual({ route, type: 'object', additionalProperties: true });
      expect(schema.description).toMatch(/Anthropic/);
      expect(`${schema.description} ${operation.description}`).not.toMatch(/https?:|www\./);
      expect(Object.keys(operation.responses['200']!.content!).sort()).toEqual(['application/json', 'text/event-stream']);
    }
  });

  it('declares every error in Anthropic’s shape, and the key as x-api-key', () => {
    const error = schemas['AnthropicErrorBodyDto']!;
    expect(Object.keys(error.properties!).sort()).toEqual(['error', 'request_id', 'type']);
    for (const [route, operation] of gatewayOperations()) {
      const errors = Object.entries(operation.responses).filter(([status]) => Number(status) >= 400);
      expect({ route, statuses: errors.map(([status]) => status) }).toEqual({ route, statuses: expect.arrayContaining(['401', '431', '500', '503']) });
      for (const [status, response] of errors) {
        expect({ route, status, schema: response.content?.['application/json']?.schema.$ref }).toEqual({ route, status, schema: '#/components/schemas/AnthropicErrorBodyDto' });
      }
      expect(operation.parameters?.find((parameter) => parameter.in === 'header')?.name).toBe('x-api-key');
    }
  });
});
