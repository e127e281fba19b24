import { Body, Controller, HttpCode, HttpStatus, Post } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { SweepStaleInvocationsCommand, type SweepReport } from '../invocations/sweep-stale-invocations.command';
import { ApiAuthenticatedErrors, ApiUnavailable, ApiWrite } from '../http-kit/api-docs.decorators';
import { Roles } from '../http-kit/auth/roles.decorator';
import { SweepDto, SweepReportDto } from './dto/sweep.dto';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/** Recovery (docs/lifecycle.md transitions 9, 12–14): settling what a crash left in flight. */
@ApiTags('settlements')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@LedgerApi()
@Controller('v1/settlements')
export class SettlementsController {
  constructor(private readonly commands: CommandBus) {}

  /** Settles requests idle for longer than `olderThanMs`; safe beside live traffic and another sweep. */
  @Post('sweep')
  @HttpCode(HttpStatus.OK)
  @Roles('system')
  @ApiOperation({
    summary: 'Settle stale requests',
    description:
      'Settles requests idle for longer than olderThanMs: estimated and reserved ones at 0 credits, dispatched and ' +
      'unmeasured ones at their estimate. Returns what it settled.',
  })
  @ApiOkResponse({ type: SweepReportDto })
  @ApiWrite()
  sweep(@Body() body: SweepDto): Promise<SweepReport> {
    return this.commands.execute(new SweepStaleInvocationsCommand(body.olderThanMs));
  }
}
