import { Controller, Inject, Logger, Post, Req, Res, UseFilters } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { GATEWAY_ROUTE_PREFIX } from '../http-kit/http-route-prefix';
import { takeOverResponse, type HttpResponse } from '../http-kit/http.types';
import { ReadsOwnBody } from '../http-kit/reads-own-body.decorator';
import { contextOf, type LedgerRequest } from '../http-kit/request-context';
import { anthropicErrorTypeOf, sendAnthropicError } from './anthropic-error.body';
import { AnthropicErrorFilter } from './anthropic-error.filter';
import { readGatewayBody, type GatewayBody, type GatewayBodyProblem } from './anthropic-body.reader';
import { presentedKeyOf } from './anthropic-key';
import { ApiGatewayPassThrough, ApiGatewayTag } from './gateway-http.openapi';
import { GATEWAY_ACCOUNTING, type GatewayAccounting, type GatewayAdmission, type GatewayCallOutcome, type MessagesBodyFacts } from './gateway-call.port';
import { GatewayForwarder } from './gateway-forwarder';
import { markGatewayPhase, NOT_ADMITTED_MODEL, publishGatewayAttempt, publishGatewayCall } from './gateway-http.channels';
import { incomingOf, isRefusal, queryOf, repeatedHeaderProblem, sendRefusal } from './gateway-http.request';
import { CALL_TAGS_HEADER, readCallTags } from '../invocations/call-attribution';
import { readMessagesBodyFacts } from './messages-body.facts';

/** count_tokens is held by nothing, so it has a bound of its own, in ms (a count takes well under a second). */
export const COUNT_TOKENS_TIMEOUT_MS = 60_000;

type Admitted = Extract<GatewayAdmission, { admitted: true }>;

/** A call whose key has the form of one and whose body was read (or found wanting). */
interface Begun {
  /** `performance.now()` when the request arrived (its first hook), for the overhead. */
  readonly arrivedAt: number;
  readonly response: ServerResponse;
  readonly requestId: string;
  readonly key: string;
  readonly read: GatewayBody;
}

/**
 * `POST /anthropic/v1/messages` (held, forwarded, relayed, settled) and `…/messages/count_tokens`
 * (authenticated and forwarded; nothing held or recorded). Each answer is written on Node's own
 * response as it arrives from upstream. See docs/gateway.md.
 */
@Controller(`${GATEWAY_ROUTE_PREFIX}/v1/messages`)
@UseFilters(AnthropicErrorFilter)
@ApiGatewayTag()
export class AnthropicMessagesController {
  private readonly logger = new Logger('Gateway');

  constructor(
    @Inject(GATEWAY_ACCOUNTING) private readonly accounting: GatewayAccounting,
    private readonly forwarder: GatewayForwarder,
  ) {}

  @Post()
  @ReadsOwnBody()
  @ApiGatewayPassThrough('Create a Message', 'Held against the key’s organization, forwarded, relayed (streamed or not), priced and recorded.')
  async messages(@Req() request: LedgerRequest, @Res() reply: HttpResponse): Promise<void> {
    const call = await this.begin(request, reply, true);
    if (call === undefined) return;
    const { response, requestId, key, read } = call;
    markGatewayPhase(requestId, 'arrived', call.arrivedAt);
    markGatewayPhase(requestId, 'body_read');
    if (read.problem !== undefined) return this.refuseBody(response, key, read.problem, requestId);
    const facts = readMessagesBodyFacts(read.bytes);
    if (facts.problem !== undefined) return this.refuseBody(response, key, { status: 400, message: facts.problem.message }, requestId);
    const tags = readCallTags(request.headers[CALL_TAGS_HEADER]);
    if ('problem' in tags) return this.refuseBody(response, key, { status: 400, message: tags.problem }, requestId);
    if (!this.ready(response, requestId, true)) return;
    const admission = await this.accounting.admit({ presentedKey: key, facts: facts.facts, tags: tags.tags, requestId });
    if (!admission.admitted) {
      sendRefusal(response, admission, requestId);
      publishGatewayCall(NOT_ADMITTED_MODEL, admission.status);
      return;
    }
    const relayed = this.forwarder.forward({
      upstream: { route: 'messages', query: queryOf(request.url), model: facts.facts.model, stream: facts.facts.stream },
      headers: request.headers,
      body: read.bytes,
      response,
      timeoutMs: admission.attemptTimeoutMs,
      requestId,
      invocationId: admission.invocationId,
      arrivedAt: call.arrivedAt,
      metricsModel: facts.facts.model,
    });
    // Delivered means settled: the caller's last bytes wait for the settlement of what the relay observed.
    await this.settle(admission, facts.facts, await relayed.upstreamEnded, requestId);
    relayed.release();
    await relayed.done;
  }

  @Post('count_tokens')
  @ReadsOwnBody()
  @ApiGatewayPassThrough('Count tokens in a Message', 'Authenticated and forwarded; nothing is held, charged or recorded.')
  async countTokens(@Req() request: LedgerRequest, @Res() reply: HttpResponse): Promise<void> {
    const call = await this.begin(request, reply, false);
    if (call === undefined) return;
    const { response, requestId, key, read } = call;
    const known = await this.accounting.authenticate(key);
    if (isRefusal(known)) return sendRefusal(response, known, requestId);
    if (read.problem !== undefined) return this.answer(response, read.problem.status, read.problem.message, requestId, false);
    if (!this.ready(response, requestId, false)) return;
    const relayed = this.forwarder.forward({
      upstream: { route: 'count_tokens', query: queryOf(request.url) },
      headers: request.headers,
      body: read.bytes,
      response,
      timeoutMs: COUNT_TOKENS_TIMEOUT_MS,
      requestId,
      arrivedAt: call.arrivedAt,
    });
    // Nothing is held: nothing to settle before the answer's end.
    relayed.release();
    await relayed.done;
  }

  /**
   * What both routes do first: Node's response taken over, the key's form checked (401 at once, the
   * body left unread) and no single-valued header sent twice (400), then the body read; undefined when already answered. `counted` for a Messages call.
   */
  private async begin(request: LedgerRequest, reply: HttpResponse, counted: boolean): Promise<Begun | undefined> {
    const response = takeOverResponse(reply);
    const { requestId, arrivedAt } = contextOf(request);
    const presented = presentedKeyOf(request.headers);
    const refused = (status: number, message: string): undefined => {
      incomingOf(request).resume();
      this.answer(response, status, message, requestId, counted);
      return undefined;
    };
    if (presented.problem !== undefined) return refused(401, presented.problem);
    const repeated = repeatedHeaderProblem(request);
    if (repeated !== undefined) return refused(400, repeated);
    return { arrivedAt, response, requestId, key: presented.key, read: await readGatewayBody(request, incomingOf(request)) };
  }

  /**
   * A body the gateway cannot hold is reported only to a caller whose key is known (else 401), and
   * counted on that key as `invalid_body` (docs/gateway.md "Rejections before admission").
   */
  private async refuseBody(response: ServerResponse, key: string, problem: GatewayBodyProblem, requestId: string): Promise<void> {
    const known = await this.accounting.authenticate(key);
    if (isRefusal(known)) {
      sendRefusal(response, known, requestId);
      publishGatewayCall(NOT_ADMITTED_MODEL, known.status);
      return;
    }
    this.accounting.noteRejection({ organizationId: known.organizationId, keyId: known.keyId, reason: 'invalid_body', requestId });
    this.answer(response, problem.status, problem.message, requestId, true);
  }

  /** False (and answered) when no call can be made: no upstream key, or the service shutting down. */
  private ready(response: ServerResponse, requestId: string, counted: boolean): boolean {
    if (this.forwarder.shuttingDown) {
      this.answer(response, 503, 'The service is shutting down; retry.', requestId, counted);
      return false;
    }
    if (!this.forwarder.configured) {
      this.logger.error({ message: 'gateway call refused: ANTHROPIC_API_KEY is not set', requestId });
      this.answer(response, 500, 'The gateway has no Anthropic key of its own to forward with.', requestId, counted);
      return false;
    }
    return true;
  }

  /** An answer of the gateway's own; `counted` for a Messages call (the metrics count those alone). */
  private answer(response: ServerResponse, status: number, message: string, requestId: string, counted: boolean): void {
    // A body refused unread (or half read) is not read on: the connection closes after the answer.
    if (status === 413) response.setHeader('connection', 'close');
    sendAnthropicError(response, status, anthropicErrorTypeOf(status), message, requestId);
    if (counted) publishGatewayCall(NOT_ADMITTED_MODEL, status);
  }

  /**
   * Once per admitted call, when upstream's answer ended: the caller is given the answer's last bytes
   * once this resolves, so a caller with its whole answer finds the call settled. A failure is
   * logged and the answer relayed anyway; the accounting tries it again while the store is
   * unavailable (GatewaySettlementRetries), else the hold is left to the sweep (docs/lifecycle.md). The
   * attempt is published for its `chat {model}` span either way. The outcome is what the relay
   * observed; what it costs is the accounting's to decide (GatewayAccounting.settle).
   */
  private async settle(admission: Admitted, facts: MessagesBodyFacts, outcome: GatewayCallOutcome, requestId: string): Promise<void> {
    markGatewayPhase(requestId, 'settling');
    try {
      await this.accounting.settle(admission, outcome, requestId);
    } catch (error) {
      this.logger.error({
        message: 'gateway call not settled yet; tried again while the store is unavailable, else the sweep settles it',
        requestId,
        invocationId: admission.invocationId,
        error: error instanceof Error ? error.message : String(error),
      });
    } finally {
      publishGatewayAttempt(admission, facts, outcome);
    }
  }
}
