import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { MAX_STREAM_NAME_LENGTH, STREAM_NAME_PATTERN, validateStreamName } from '../event-store/event-store-input.validation';
import { EVENT_STORE, InvalidEventStoreInputError, type EventStore, type RecordedEvent } from '../event-store/event-store.port';
import { EMPTY_PATH_SEGMENT } from '../http-kit/dto/field-rules';
import { ApiAuthenticatedErrors, ApiInvalidRequest, ApiNotFound, ApiUnavailable } from '../http-kit/api-docs.decorators';
import { Roles } from '../http-kit/auth/roles.decorator';
import { MAX_STREAM_PAGE_EVENTS, RecordedEventDto, StreamPageDto, StreamQueryDto } from './dto/stream.dto';
import { InvalidRequestException, ResourceNotFoundException } from '../http-kit/http-error.body';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/** The event log itself, for operators and auditors replaying it (docs/http.md "Routes"). */
@ApiTags('streams')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@LedgerApi()
@Controller('v1/streams')
export class StreamsController {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  /**
   * A stream's events in revision order, at most MAX_STREAM_PAGE_EVENTS per answer; `nextFrom` says
   * where the next page starts. Streams are named `<category>-<id>`, e.g. `account-demo-org`.
   */
  @Get(':streamName')
  @Roles('system', 'auditor')
  @ApiOperation({
    summary: 'Read a stream in order',
    description:
      `The events of \`operation-<id>\`, \`account-<id>\` or \`invocation-<id>\` from revision \`from\` (default 0), ` +
      `at most ${MAX_STREAM_PAGE_EVENTS} per page. Revisions and positions are decimal strings.`,
  })
  @ApiParam({ name: 'streamName', schema: { type: 'string', minLength: 1, maxLength: MAX_STREAM_NAME_LENGTH, pattern: STREAM_NAME_PATTERN.source } })
  @ApiOkResponse({ type: StreamPageDto })
  @ApiInvalidRequest()
  @ApiNotFound('The stream does not exist.')
  async read(@Param('streamName') streamName: string, @Query() query: StreamQueryDto): Promise<StreamPageDto> {
    if (streamName === EMPTY_PATH_SEGMENT) throw InvalidRequestException.of('streamName', 'must not be empty');
    try {
      validateStreamName(streamName);
    } catch (error) {
      if (!(error instanceof InvalidEventStoreInputError)) throw error;
      throw InvalidRequestException.of('streamName', error.message.replace(/^streamName: /, ''));
    }
    const head = await this.store.streamRevision(streamName);
    if (head === undefined) throw new ResourceNotFoundException('stream', streamName);
    const from = BigInt(query.from ?? '0');
    const events = from > head ? [] : await this.store.readStream(streamName, { fromRevision: from, maxCount: MAX_STREAM_PAGE_EVENTS });
    const last = events[events.length - 1];
    return {
      streamName,
      from: from.toString(),
      events: events.map(eventDto),
      ...(last !== undefined && last.revision < head ? { nextFrom: (last.revision + 1n).toString() } : {}),
    };
  }
}

function eventDto(event: RecordedEvent): RecordedEventDto {
  return {
    id: event.id,
    type: event.type,
    revision: event.revision.toString(),
    position: event.position.toString(),
    recordedAt: event.recordedAt,
    data: event.data,
    metadata: event.metadata,
  };
}
