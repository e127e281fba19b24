import { Body, Controller, Put } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AlertThreshold } from '../accounts/credit-alerts';
import { ApiAuthenticatedErrors, ApiNotFound, ApiUnavailable, ApiWrite } from '../http-kit/api-docs.decorators';
import { mayAccessOrganization, type Caller } from '../http-kit/auth/caller';
import { CurrentCaller } from '../http-kit/auth/current-caller.decorator';
import { Roles } from '../http-kit/auth/roles.decorator';
import { ResourceNotFoundException } from '../http-kit/http-error.body';
import { IdParam } from '../http-kit/id-param.pipe';
import { AlertThresholdsDto, AlertThresholdsResultDto } from './alert-thresholds.dto';
import { SetAlertThresholdsCommand, type AlertThresholdsResult } from './set-alert-thresholds.command';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/** Credit alerts of an organization (README.md "Credit alerts"). */
@ApiTags('alerts')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@LedgerApi()
@Controller('v1/organizations/:organizationId/alerts')
export class AlertsController {
  constructor(private readonly commands: CommandBus) {}

  @Put()
  @Roles('system', 'org_admin')
  @ApiOperation({
    summary: 'Set the credit alert thresholds',
    description:
      'Replaces the thresholds: `available_below` (credits) and `used_share_above` (percent of the granted credits charged). ' +
      'A settlement or adjustment that crosses one appends CreditThresholdCrossed to the account stream, once per crossing, ' +
      'and again only after the figure came back; webhooks subscribed to it deliver it.',
  })
  @ApiOkResponse({ type: AlertThresholdsResultDto })
  @ApiWrite()
  @ApiNotFound('No such organization, or not the caller’s.')
  set(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @Body() body: AlertThresholdsDto,
  ): Promise<AlertThresholdsResult> {
    if (!mayAccessOrganization(caller, organizationId)) throw new ResourceNotFoundException('organization', organizationId);
    // Passed on as given: the account decider names a field that does not belong to its kind.
    const thresholds = body.thresholds.map(({ kind, credits, percent }) => ({
      kind,
      ...(credits === undefined ? {} : { credits }),
      ...(percent === undefined ? {} : { percent }),
    })) as AlertThreshold[];
    return this.commands.execute(new SetAlertThresholdsCommand(organizationId, thresholds));
  }
}
