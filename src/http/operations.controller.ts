import { Body, Controller, Get, Put } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { PublishOperationCommand } from '../catalog/publish-operation.command';
import { ApiAuthenticatedErrors, ApiInvalidRequest, ApiNotFound, ApiUnavailable, ApiWrite } from '../http-kit/api-docs.decorators';
import { Roles } from '../http-kit/auth/roles.decorator';
import { PublishedVersionDto, PublishOperationDto } from './dto/publication.dto';
import { RoutingBudgetsDto } from './dto/read-views.dto';
import { ResourceNotFoundException } from '../http-kit/http-error.body';
import { IdParam } from '../http-kit/id-param.pipe';
import { ReadModelReader } from './read-model.reader';
import type { RoutingBudgetsView } from '../../projections';
import { GetPublicationsQuery } from '../queries/ledger.queries';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/**
 * The operation catalog (docs/http.md, the publications routes): publications and their historical
 * routing budgets.
 */
@ApiTags('operations')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@LedgerApi()
@Controller('v1/operations/:operationId/publications')
export class OperationsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly reader: ReadModelReader,
  ) {}

  /** Publishes the operation's next immutable version. Repeating the version in force writes nothing. */
  @Put()
  @Roles('system')
  @ApiOperation({
    summary: 'Publish the next version of an operation',
    description:
      'Routing, limits, integer prices (credits per million tokens), the credit hold and the operation switch. ' +
      'Requests already admitted keep the version they were admitted under.',
  })
  @ApiOkResponse({ type: PublishedVersionDto })
  @ApiWrite()
  publish(@IdParam('operationId') operationId: string, @Body() body: PublishOperationDto): Promise<PublishedVersionDto> {
    return this.commands.execute(new PublishOperationCommand(operationId, body));
  }

  /** Every version of the operation with the window it was in force (historical routing budgets). */
  @Get()
  @Roles('system', 'auditor')
  @ApiOperation({
    summary: 'Historical routing budgets of an operation',
    description: 'Every published version with its routing, limits, prices, credit hold, switch and time window.',
  })
  @ApiOkResponse({ type: RoutingBudgetsDto })
  @ApiInvalidRequest()
  @ApiNotFound('The operation was never published.')
  async publications(@IdParam('operationId') operationId: string): Promise<RoutingBudgetsView> {
    const budgets = await this.reader.find(new GetPublicationsQuery(operationId));
    if (budgets === undefined) throw new ResourceNotFoundException('operation', operationId);
    return budgets;
  }
}
