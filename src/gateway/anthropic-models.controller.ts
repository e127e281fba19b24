import { All, Controller, Get, Inject, Param, Query, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeEndpoint } from '@nestjs/swagger';
import type { ServerResponse } from 'node:http';
import { GATEWAY_ROUTE_PREFIX } from '../http-kit/http-route-prefix';
import { takeOverResponse, type HttpResponse } from '../http-kit/http.types';
import { ReadsOwnBody } from '../http-kit/reads-own-body.decorator';
import { contextOf, type LedgerRequest } from '../http-kit/request-context';
import { anthropicErrorTypeOf, sendAnthropicError } from './anthropic-error.body';
import { AnthropicErrorFilter } from './anthropic-error.filter';
import { presentedKeyOf } from './anthropic-key';
import { GATEWAY_ACCOUNTING, modelNotOnRateCard, type GatewayAccounting, type GatewayModelInfo } from './gateway-call.port';
import { ApiGatewayRead, ApiGatewayTag } from './gateway-http.openapi';
import { incomingOf, isRefusal, repeatedHeaderProblem, sendRefusal } from './gateway-http.request';
import { page, readPageQuery, sendJson } from './anthropic-list-page';

/**
 * `GET /anthropic/v1/models` and `…/models/:model`: the rate card's enabled models that the key may
 * use, answered by the gateway itself (nothing goes upstream). Paged as Anthropic pages them:
 * `limit`, `after_id`, `before_id`.
 */
@Controller(`${GATEWAY_ROUTE_PREFIX}/v1/models`)
@UseFilters(AnthropicErrorFilter)
@ApiGatewayTag()
export class AnthropicModelsController {
  constructor(@Inject(GATEWAY_ACCOUNTING) private readonly accounting: GatewayAccounting) {}

  @Get()
  @ApiGatewayRead('List Models', 'The rate card’s enabled models that the key may use, in Anthropic’s list shape.', [[400, 'A `limit` that is not a whole number from 1 to 1000 (`invalid_request_error`).']])
  async list(
    @Req() request: LedgerRequest,
    @Res() reply: HttpResponse,
    @Query('limit') limit?: unknown,
    @Query('after_id') afterId?: unknown,
    @Query('before_id') beforeId?: unknown,
  ): Promise<void> {
    const response = takeOverResponse(reply);
    const models = await this.models(request, response);
    if (models === undefined) return;
    const query = readPageQuery(limit, afterId, beforeId);
    if ('problem' in query) {
      sendAnthropicError(response, 400, 'invalid_request_error', query.problem, contextOf(request).requestId);
      return;
    }
    sendJson(response, page(models, query.size, query.afterId, query.beforeId));
  }

  @Get(':model')
  @ApiGatewayRead('Get a Model', 'One model of the rate card that the key may use.', [[404, 'No such model on the rate card for this key (`not_found_error`).']])
  async get(@Req() request: LedgerRequest, @Res() reply: HttpResponse, @Param('model') model: string): Promise<void> {
    const response = takeOverResponse(reply);
    const models = await this.models(request, response);
    if (models === undefined) return;
    const found = models.find((info) => info.id === model);
    if (found === undefined) sendAnthropicError(response, 404, 'not_found_error', modelNotOnRateCard(model), contextOf(request).requestId);
    else sendJson(response, found);
  }

  /** The key's models, or undefined once its refusal is answered. */
  private async models(request: LedgerRequest, response: ServerResponse): Promise<readonly GatewayModelInfo[] | undefined> {
    const { requestId } = contextOf(request);
    const presented = presentedKeyOf(request.headers);
    if (presented.problem !== undefined) {
      sendAnthropicError(response, 401, 'authentication_error', presented.problem, requestId);
      return undefined;
    }
    const repeated = repeatedHeaderProblem(request);
    if (repeated !== undefined) {
      sendAnthropicError(response, 400, 'invalid_request_error', repeated, requestId);
      return undefined;
    }
    const answer = await this.accounting.models(presented.key);
    if (isRefusal(answer)) {
      sendRefusal(response, answer, requestId);
      return undefined;
    }
    return answer.models;
  }
}

/**
 * Anything else under `/anthropic` (another path, another method): 404 in Anthropic's shape, so an
 * Anthropic client reads it as it would Anthropic's own. Registered after the routes above.
 */
@Controller(GATEWAY_ROUTE_PREFIX)
@UseFilters(AnthropicErrorFilter)
export class AnthropicNotFoundController {
  @All(['', '*'])
  @ReadsOwnBody()
  @ApiExcludeEndpoint()
  notFound(@Req() request: LedgerRequest, @Res() reply: HttpResponse): void {
    const response = takeOverResponse(reply);
    incomingOf(request).resume();
    const path = request.url.split('?', 1)[0];
    sendAnthropicError(response, 404, anthropicErrorTypeOf(404), `Not found: ${request.method} ${path}`, contextOf(request).requestId);
  }
}
