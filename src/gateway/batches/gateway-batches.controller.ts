import { Controller, Get, Param, Query, type PipeTransform } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiAuthenticatedErrors, ApiInvalidRequest, ApiNotFound, ApiUnavailable } from '../../http-kit/api-docs.decorators';
import { mayAccessOrganization, type Caller } from '../../http-kit/auth/caller';
import { CurrentCaller } from '../../http-kit/auth/current-caller.decorator';
import { Roles } from '../../http-kit/auth/roles.decorator';
import { InvalidRequestException, ResourceNotFoundException } from '../../http-kit/http-error.body';
import { CUSTOM_ID_PATTERN } from './batch-requests.reader';
import { IdParam } from '../../http-kit/id-param.pipe';
import { LedgerApi } from '../../http-kit/ledger-api.decorator';
import { explainBatch, explainBatchRequest, pageAfter, type BatchExplanation, type BatchRequestExplanation } from './batch-explanation';
import { BatchExplanationDto, BatchListDto, BatchPageQueryDto, BatchRequestExplanationDto, BatchRequestListDto, DEFAULT_BATCH_PAGE } from './gateway-batches.dto';
import { GatewayBatches } from './gateway-batches.service';

/**
 * A batch id in the path: letters, digits, `_` and `-`, at most 64 (a gateway batch's own id is
 * `msgbatch_` and 32 hex digits; any other id of this form is a batch that does not exist, 404).
 */
const BATCH_ID_PARAM = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_BATCH_ID_PARAM_CHARS = 64;
/** A custom_id's longest, in characters (Anthropic's bound). */
const MAX_CUSTOM_ID_CHARS = 64;

/**
 * A path parameter checked against its pattern (400 naming it, before anything is read) and documented
 * with the same pattern and length, as IdParam does for the ledger's own ids.
 */
function PatternParam(name: string, pattern: RegExp, maxLength: number): ParameterDecorator {
  const pipe: PipeTransform<unknown, string> = {
    transform: (value: unknown) => {
      if (typeof value !== 'string' || value.length > maxLength || !pattern.test(value)) throw InvalidRequestException.of(name, `must match ${pattern.source}`);
      return value;
    },
  };
  return (target: object, method: string | symbol | undefined, index: number) => {
    Param(name, pipe)(target, method, index);
    const descriptor = method === undefined ? undefined : Object.getOwnPropertyDescriptor(target, method);
    if (descriptor !== undefined) ApiParam({ name, required: true, schema: { type: 'string', pattern: pattern.source, minLength: 1, maxLength } })(target, method!, descriptor);
  };
}

/** A Message Batch and each of its requests, explained (docs/gateway.md "Message Batches"). */
@ApiTags('gateway')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@Roles('system', 'auditor', 'org_admin', 'org_member')
@LedgerApi()
@Controller('v1/organizations/:organizationId/gateway-batches')
export class GatewayBatchesController {
  constructor(private readonly batches: GatewayBatches) {}

  @Get()
  @ApiOperation({ summary: 'List the Message Batches', description: 'The organization’s batches, newest first, each explained: status, request count, results by type, hold and charge.' })
  @ApiOkResponse({ type: BatchListDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such organization, or not the caller’s.')
  async list(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string, @Query() query: BatchPageQueryDto): Promise<{ batches: BatchExplanation[]; nextAfter: string | null }> {
    if (!mayAccessOrganization(caller, organizationId)) throw new ResourceNotFoundException('organization', organizationId);
    const indexed = await this.batches.indexedOf(organizationId);
    const page = pageOf(indexed.map((batch) => batch.batchId), query);
    const batches: BatchExplanation[] = [];
    for (const batchId of page.ids) {
      const explained = explainBatch((await this.batches.state(batchId))!);
      if (explained !== undefined) batches.push(explained);
    }
    return { batches, nextAfter: page.nextAfter };
  }

  @Get(':batchId')
  @ApiOperation({ summary: 'Explain a Message Batch', description: 'Its key, its hold at batch rates, its results by type and its charge, with a sentence.' })
  @ApiOkResponse({ type: BatchExplanationDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such organization or batch, or not the caller’s.')
  async batch(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string, @PatternParam('batchId', BATCH_ID_PARAM, MAX_BATCH_ID_PARAM_CHARS) batchId: string): Promise<BatchExplanation> {
    const explained = explainBatch(await this.owned(caller, organizationId, batchId));
    if (explained === undefined) throw new ResourceNotFoundException('batch', batchId);
    return explained;
  }

  @Get(':batchId/requests')
  @ApiOperation({ summary: 'List the requests of a Message Batch', description: 'In the order sent, each explained: its model, hold and result as charged.' })
  @ApiOkResponse({ type: BatchRequestListDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such organization or batch, or not the caller’s.')
  async requests(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @PatternParam('batchId', BATCH_ID_PARAM, MAX_BATCH_ID_PARAM_CHARS) batchId: string,
    @Query() query: BatchPageQueryDto,
  ): Promise<{ requests: BatchRequestExplanation[]; nextAfter: string | null }> {
    const state = await this.owned(caller, organizationId, batchId);
    const page = pageOf([...state.requests.keys()], query);
    return { requests: page.ids.flatMap((customId) => explainBatchRequest(state, customId) ?? []), nextAfter: page.nextAfter };
  }

  @Get(':batchId/requests/:customId')
  @ApiOperation({ summary: 'Explain a request of a Message Batch', description: 'Its model, rate card version and hold, and its result as charged, with a sentence.' })
  @ApiOkResponse({ type: BatchRequestExplanationDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such organization, batch or request, or not the caller’s.')
  async request(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @PatternParam('batchId', BATCH_ID_PARAM, MAX_BATCH_ID_PARAM_CHARS) batchId: string,
    @PatternParam('customId', CUSTOM_ID_PATTERN, MAX_CUSTOM_ID_CHARS) customId: string,
  ): Promise<BatchRequestExplanation> {
    const explained = explainBatchRequest(await this.owned(caller, organizationId, batchId), customId);
    if (explained === undefined) throw new ResourceNotFoundException('request', customId);
    return explained;
  }

  /** The batch's state, if the caller may see the organization and the batch is that organization's: else 404. */
  private async owned(caller: Caller, organizationId: string, batchId: string) {
    if (!mayAccessOrganization(caller, organizationId)) throw new ResourceNotFoundException('organization', organizationId);
    const state = await this.batches.state(batchId);
    if (state?.created?.organizationId !== organizationId) throw new ResourceNotFoundException('batch', batchId);
    return state;
  }
}

/** The page the query asks for; 400 naming `after` when it is not in the list. */
function pageOf(ids: readonly string[], query: BatchPageQueryDto): { readonly ids: readonly string[]; readonly nextAfter: string | null } {
  const page = pageAfter(ids, query.after, query.limit === undefined ? DEFAULT_BATCH_PAGE : Number(query.limit));
  if (page === undefined) throw InvalidRequestException.of('after', 'is not an entry of this list');
  return page;
}
