import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { MAX_REQUEST_BODY_BYTES } from './http.bounds';

export const OPENAPI_PATH = 'docs';

/** The OpenAPI document of the API docs/http.md describes. */
export function openApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('llm-ledger')
    .setDescription(
      'Admits LLM invocations against organizations’ credits, runs bounded conversations, settles their charges and ' +
        'explains them from the event log. Credits are integers; times are milliseconds. Every error has the same ' +
        `body: { statusCode, error, code, message, fields?, requestId }. Request bodies are JSON of at most ${MAX_REQUEST_BODY_BYTES} bytes; ` +
        'a DELETE takes none. Every route may answer 400 (a request that is not valid HTTP, or a single-valued header sent twice), ' +
        '408 (too slow to arrive) and 431 (headers too large). A path or method this document does not list answers 404 in the same shape.',
    )
    .setVersion('1')
    // addSecurity, not addBearerAuth: that one adds `bearerFormat: "JWT"`, and these tokens are opaque strings.
    .addSecurity('bearer', { type: 'http', scheme: 'bearer', description: 'An opaque token from LEDGER_TOKENS (or a demo token with LEDGER_DEMO=1).' })
    .build();
  return SwaggerModule.createDocument(app, config);
}

/** Serves the document at /docs (UI) and /docs-json. */
export function setupOpenApi(app: INestApplication): void {
  SwaggerModule.setup(OPENAPI_PATH, app, () => openApiDocument(app));
}
