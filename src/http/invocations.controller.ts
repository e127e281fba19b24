import { Body, Controller, Get, Headers, HttpCode, HttpStatus, Inject, Logger, Post, Res } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiAcceptedResponse, ApiBearerAuth, ApiExtraModels, ApiHeader, ApiOkResponse, ApiOperation, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import { INVOCATION_STATUS_FIELDS, pickFields, type InvocationView } from '../../projections';
import { RunOperationCommand } from '../invocations/run-operation.command';
import { CancelInvocationCommand } from '../invocations/cancel-invocation.command';
import type { InvocationResult } from '../invocations/invocation-result';
import { ApiAuthenticatedErrors, ApiInvalidRequest, ApiNotFound, ApiUnavailable, ApiWrite } from '../http-kit/api-docs.decorators';
import { mayAccessOrganization, type Caller } from '../http-kit/auth/caller';
import { CurrentCaller } from '../http-kit/auth/current-caller.decorator';
import { Roles } from '../http-kit/auth/roles.decorator';
import { ErrorBodyDto } from '../http-kit/dto/error-body.dto';
import { IDEMPOTENCY_KEY_SCHEMA } from '../http-kit/dto/field-rules';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import { HTTP_ROUTE_PREFIX } from '../http-kit/http-route-prefix';
import type { HttpResponse } from '../http-kit/http.types';
import { streamInvocationEvents } from './invocation-events.stream';
import { CancellationRequestedDto, InvocationAcceptedDto, InvocationProgressDto, InvocationStatusDto, RunInvocationDto, RunInvocationResultDto } from './dto/invocation.dto';
import { AttemptHistoryDto, ExplanationDto } from './dto/read-views.dto';
import { idempotencyKeyProblem } from '../domain/field-checks';
import { InvalidRequestException, ResourceNotFoundException } from '../http-kit/http-error.body';
import { IdParam } from '../http-kit/id-param.pipe';
import { ReadModelReader } from './read-model.reader';
import type { AttemptHistoryView, ExplanationView } from '../../projections';
import { GetAttemptsQuery, GetExplanationQuery } from '../queries/ledger.queries';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/** The header a client may carry its idempotency key in (IETF draft `Idempotency-Key`). */
const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** Longest `Last-Event-ID` accepted, in digits: a revision within a signed 64-bit integer. */
const MAX_LAST_EVENT_ID_DIGITS = 19;
const LAST_EVENT_ID = new RegExp(`^\\d{1,${MAX_LAST_EVENT_ID_DIGITS}}$`);

/** Invocations (docs/lifecycle.md): run one, and read its state, attempts and explanation. */
@ApiTags('invocations')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@LedgerApi()
@Controller('v1/invocations')
export class InvocationsController {
  private readonly logger = new Logger('Invocations');

  constructor(
    private readonly commands: CommandBus,
    private readonly reader: ReadModelReader,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    // Where the API is mounted (http.prefix), so a Location names the route where it really is.
    @Inject(HTTP_ROUTE_PREFIX) private readonly routePrefix: string,
  ) {}

  /**
   * Runs the operation's registered feature for the organization and answers once the invocation is
   * settled (or refused). A client that loses the connection can repeat the request with the same
   * idempotency key: the conversation is not cancelled by the disconnect, and the repeat answers
   * with its result.
   */
  @Post()
  @HttpCode(HttpStatus.OK)
  @Roles('system', 'org_admin', 'org_member')
  @ApiOperation({
    summary: 'Run an operation for an organization',
    description:
      'Admits the request against the organization’s credits, runs the bounded conversation with the published ' +
      'routing and limits, settles the charge, and returns the settled (or refused) invocation with the accepted ' +
      'answer when it completed.',
  })
  @ApiOkResponse({ type: RunInvocationResultDto })
  @ApiWrite()
  @ApiNotFound('No such operation or organization, or not the caller’s organization.')
  @ApiHeader({ name: 'Idempotency-Key', required: false, schema: { ...IDEMPOTENCY_KEY_SCHEMA }, description: 'The idempotency key, instead of the body field (the same rules; also as a quoted string).' })
  @ApiUnprocessableEntityResponse({ type: ErrorBodyDto, description: '`idempotency_key_reused`: the key was used for another operation or input.' })
  @ApiHeader({ name: 'Prefer', required: false, description: '`respond-async`: answer 202 with `{ invocationId, state }` and a `Location` at once.' })
  @ApiAcceptedResponse({ type: InvocationAcceptedDto, description: 'With `Prefer: respond-async`: the invocation is under way; follow it at `Location` or its `/events`.' })
  async run(
    @CurrentCaller() caller: Caller,
    @Body() body: RunInvocationDto,
    @Headers(IDEMPOTENCY_KEY_HEADER) keyHeader: string | undefined,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) response: HttpResponse,
  ): Promise<RunInvocationResultDto | InvocationAcceptedDto> {
    const idempotencyKey = idempotencyKeyOf(body.idempotencyKey, keyHeader);
    if (!mayAccessOrganization(caller, body.organizationId)) throw new ResourceNotFoundException('organization', body.organizationId);
    const request = {
      operationId: body.operationId,
      organizationId: body.organizationId,
      input: body.input,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    };
    if (!prefersAsync(prefer)) return resultOf(await this.commands.execute(new RunOperationCommand(request)));

    // Answer once the first event is written (bad input, an unknown operation or organization are still
    // refused synchronously); the conversation goes on without the connection.
    const accepted = await new Promise<string>((resolve, reject) => {
      this.commands.execute(new RunOperationCommand({ ...request, onEstimated: resolve })).then(
        (result) => resolve(result.invocationId),
        (error: unknown) => {
          reject(error);
          // Once answered 202, a failure belongs to the log (the sweep settles what it left); say it here.
          this.logger.warn({ message: 'async invocation failed after it was accepted', error: error instanceof Error ? error.name : String(error) });
        },
      );
    });
    const location = `${this.routePrefix}${INVOCATIONS_PATH}/${accepted}`;
    const status = await this.reader.invocation(caller, accepted).catch(() => undefined);
    response.status(HttpStatus.ACCEPTED);
    response.header('Location', location);
    response.header('Preference-Applied', 'respond-async');
    return { invocationId: accepted, state: status?.state ?? 'estimated' };
  }

  /**
   * The invocation's lifecycle events as Server-Sent Events, read from its stream and then followed as
   * they commit: each event's stream revision is its SSE `id`, so `Last-Event-ID` resumes after the last
   * one received, with none missing and none repeated; the stream closes after settlement (or refusal).
   * The events hold no conversation text (the log never does).
   */
  @Get(':invocationId/events')
  @Roles('system', 'auditor', 'org_admin', 'org_member')
  @ApiOperation({
    summary: 'Follow an invocation’s lifecycle (Server-Sent Events)',
    description:
      'One SSE message per event of the invocation’s stream, from the start or after `Last-Event-ID` (a revision): ' +
      '`id` = the stream revision, `event` = the event type, `data` = an `InvocationProgressDto` as JSON (type, revision, ' +
      'time, the state after the event and the figures a follower needs; never the stored event, its idempotency key or ' +
      'fingerprint). Closes after `InvocationSettled` or `InvocationRefused`. Comment lines keep an idle connection open.',
  })
  @ApiExtraModels(InvocationProgressDto)
  @ApiHeader({ name: 'Last-Event-ID', required: false, schema: { type: 'integer', minimum: 0 }, description: `Resume after this revision (a non-negative integer of at most ${MAX_LAST_EVENT_ID_DIGITS} digits).` })
  @ApiOkResponse({
    description: 'An event stream; each message’s `data` is an `InvocationProgressDto`.',
    content: { 'text/event-stream': { schema: { type: 'string', description: 'Messages `id: <revision>`, `event: <type>`, `data: <InvocationProgressDto as JSON>`.' } } },
  })
  @ApiInvalidRequest()
  @ApiNotFound('No such invocation, or not the caller’s organization’s.')
  async events(
    @CurrentCaller() caller: Caller,
    @IdParam('invocationId') invocationId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() response: HttpResponse,
  ): Promise<void> {
    const after = lastEventIdOf(lastEventId);
    await streamInvocationEvents({ store: this.store, caller, invocationId, after, response });
  }

  /**
   * Asks a running invocation to stop: the request is recorded in its stream, so whichever instance
   * runs the conversation ends it `cancelled` at its next boundary and settles it (docs/lifecycle.md).
   */
  @Post(':invocationId/cancel')
  @HttpCode(HttpStatus.ACCEPTED)
  @Roles('system', 'org_admin', 'org_member')
  @ApiOperation({
    summary: 'Cancel a running invocation',
    description:
      'Records a cancellation request in the invocation’s stream; the instance running its conversation (this one or ' +
      'another on the same store) ends it `cancelled` at its next boundary and settles it. 202: recorded (a repeat keeps ' +
      'the first request); 409 once the conversation has ended. The explanation then says who asked and when.',
  })
  @ApiAcceptedResponse({ type: CancellationRequestedDto })
  @ApiNotFound('No such invocation, or not the caller’s organization’s.')
  @ApiWrite('The conversation has ended: there is nothing left to stop.')
  cancel(@CurrentCaller() caller: Caller, @IdParam('invocationId') invocationId: string): Promise<CancellationRequestedDto> {
    // Who asked, as the log and the explanation will say it: the role and organization, never the token.
    const requestedBy = caller.organizationId === undefined ? caller.role : `${caller.role} of ${caller.organizationId}`;
    const restrictTo = caller.role === 'system' ? undefined : caller.organizationId;
    return this.commands.execute(new CancelInvocationCommand(invocationId, requestedBy, restrictTo));
  }

  /** Lifecycle state, outcome, publication version, estimate and charge. */
  @Get(':invocationId')
  @Roles('system', 'auditor', 'org_admin', 'org_member')
  @ApiOperation({ summary: 'An invocation’s state', description: 'Lifecycle state, outcome, publication version, estimate and charge.' })
  @ApiOkResponse({ type: InvocationStatusDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such invocation, or not the caller’s organization’s.')
  async status(@CurrentCaller() caller: Caller, @IdParam('invocationId') invocationId: string): Promise<InvocationStatusDto> {
    return statusOf(await this.reader.invocation(caller, invocationId));
  }

  /**
   * Every provider attempt with its turn, retry, classification, wait, usage and price
   * (docs/rules.md rule 07).
   */
  @Get(':invocationId/attempts')
  @Roles('system', 'auditor', 'org_admin', 'org_member')
  @ApiOperation({
    summary: 'An invocation’s attempt history',
    description: 'Provider attempts in order: turn, retry number, classification, wait, usage and integer price.',
  })
  @ApiOkResponse({ type: AttemptHistoryDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such invocation, or not the caller’s organization’s.')
  async attempts(@CurrentCaller() caller: Caller, @IdParam('invocationId') invocationId: string): Promise<AttemptHistoryView> {
    return this.reader.ofInvocation(caller, invocationId, new GetAttemptsQuery(invocationId));
  }

  /** Why the invocation was refused or how its conversation ended, with the figures behind it. */
  @Get(':invocationId/explanation')
  @Roles('system', 'auditor', 'org_admin', 'org_member')
  @ApiOperation({
    summary: 'An invocation’s explanation',
    description:
      'The state, the outcome or refusal reason, the figures behind it, and the limit that ended it with the ' +
      'operation id and publication version it came from; as a sentence and as fields.',
  })
  @ApiOkResponse({ type: ExplanationDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such invocation, or not the caller’s organization’s.')
  async explanation(@CurrentCaller() caller: Caller, @IdParam('invocationId') invocationId: string): Promise<ExplanationView> {
    return this.reader.ofInvocation(caller, invocationId, new GetExplanationQuery(invocationId));
  }
}

const INVOCATIONS_PATH = '/v1/invocations';

/** RFC 7240: `Prefer: respond-async` (among other preferences, any case). */
function prefersAsync(prefer: string | undefined): boolean {
  return prefer !== undefined && prefer.split(/[,;]/).some((token) => token.trim().toLowerCase() === 'respond-async');
}

function lastEventIdOf(header: string | undefined): bigint | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  if (!LAST_EVENT_ID.test(header.trim())) throw InvalidRequestException.of('Last-Event-ID', 'must be an event id this stream sent (a revision)');
  return BigInt(header.trim());
}

/**
 * The request's idempotency key: the body's field or the `Idempotency-Key` header (as a plain value,
 * or as the IETF draft's quoted string), the same key if both are given.
 */
function idempotencyKeyOf(fromBody: string | undefined, header: string | undefined): string | undefined {
  if (header === undefined) return fromBody;
  const quoted = /^"((?:[^"\\]|\\["\\])*)"$/.exec(header);
  const key = quoted === null ? header : quoted[1]!.replace(/\\(["\\])/g, '$1');
  const problem = idempotencyKeyProblem(key);
  if (problem !== undefined) throw InvalidRequestException.of('Idempotency-Key', problem);
  if (fromBody !== undefined && fromBody !== key) throw InvalidRequestException.of('idempotencyKey', 'differs from the Idempotency-Key header');
  return key;
}

/** The result fields docs/http.md lists for `POST /v1/invocations`, and nothing of the runner's internals. */
function resultOf(summary: InvocationResult): RunInvocationResultDto {
  return {
    invocationId: summary.invocationId,
    state: summary.state,
    ...(summary.outcome === undefined ? {} : { outcome: summary.outcome }),
    ...(summary.refusalReason === undefined ? {} : { refusalReason: summary.refusalReason }),
    ...(summary.publicationVersion === undefined ? {} : { publicationVersion: summary.publicationVersion }),
    estimate: summary.estimate,
    charge: summary.charge,
    turnsUsed: summary.turnsUsed,
    toolCallsUsed: summary.toolCallsUsed,
    ...(summary.answer === undefined ? {} : { answer: summary.answer }),
    ...(summary.answerUnavailable === undefined ? {} : { answerUnavailable: summary.answerUnavailable }),
  };
}

function statusOf(view: InvocationView): InvocationStatusDto {
  return pickFields(view, INVOCATION_STATUS_FIELDS);
}
