import { Body, Controller, Get, HttpCode, HttpStatus, Inject, Post, Put } from '@nestjs/common';
import { moneyMember } from '../config/credit-value';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { CommandBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import {
  AdjustCreditsCommand,
  ChangeOrganizationSettingsCommand,
  GrantCreditsCommand,
  type LedgerEntryResult,
  type OrganizationSettings,
} from '../accounts/account-commands';
import { ApiAuthenticatedErrors, ApiInvalidRequest, ApiNotFound, ApiUnavailable, ApiWrite } from '../http-kit/api-docs.decorators';
import { mayAccessOrganization, type Caller } from '../http-kit/auth/caller';
import { CurrentCaller } from '../http-kit/auth/current-caller.decorator';
import { Roles } from '../http-kit/auth/roles.decorator';
import { OrganizationBalanceDto } from './dto/balance.dto';
import { AdjustCreditsDto, GrantCreditsDto, LedgerEntryResultDto } from './dto/credit-entry.dto';
import { ErrorBodyDto } from '../http-kit/dto/error-body.dto';
import { OrganizationSettingsDto, OrganizationSettingsResultDto } from './dto/organization-settings.dto';
import { ResourceNotFoundException } from '../http-kit/http-error.body';
import { IdParam } from '../http-kit/id-param.pipe';
import { GetBalanceQuery } from '../queries/ledger.queries';
import { ReadModelReader } from './read-model.reader';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/**
 * Organizations' credit accounts (docs/lifecycle.md "Settlement and the account"): grants, adjustments,
 * settings and the balance.
 */
@ApiTags('organizations')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@LedgerApi()
@Controller('v1/organizations/:organizationId')
export class OrganizationsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly reader: ReadModelReader,
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
  ) {}

  /** Adds credits. The idempotency key is required: a retried grant must never pay twice. */
  @Post('grants')
  @HttpCode(HttpStatus.OK)
  @Roles('system')
  @ApiOperation({
    summary: 'Grant credits to an organization',
    description: 'Integer credits with a reason and an idempotency key; repeating the key returns the first result.',
  })
  @ApiOkResponse({ type: LedgerEntryResultDto })
  @ApiWrite()
  @ApiUnprocessableEntityResponse({ type: ErrorBodyDto, description: '`idempotency_key_reused`: the key was used for a different entry.' })
  grant(@IdParam('organizationId') organizationId: string, @Body() body: GrantCreditsDto): Promise<LedgerEntryResult> {
    return this.commands.execute(new GrantCreditsCommand(organizationId, body.credits, body.reason, body.idempotencyKey));
  }

  /** Corrects credits up or down. */
  @Post('adjustments')
  @HttpCode(HttpStatus.OK)
  @Roles('system')
  @ApiOperation({
    summary: 'Adjust an organization’s credits',
    description: 'Non-zero integer credits (negative takes credits away), a reason and an idempotency key.',
  })
  @ApiOkResponse({ type: LedgerEntryResultDto })
  @ApiWrite()
  @ApiUnprocessableEntityResponse({ type: ErrorBodyDto, description: '`idempotency_key_reused`: the key was used for a different entry.' })
  adjust(@IdParam('organizationId') organizationId: string, @Body() body: AdjustCreditsDto): Promise<LedgerEntryResult> {
    return this.commands.execute(new AdjustCreditsCommand(organizationId, body.credits, body.reason, body.idempotencyKey));
  }

  /** Switches AI on or off and sets the running-slot limit. */
  @Put('settings')
  @Roles('system')
  @ApiOperation({
    summary: 'Change an organization’s settings',
    description: '`aiEnabled` (the organization switch) and/or `maxRunning` (invocations that may run at once).',
  })
  @ApiOkResponse({ type: OrganizationSettingsResultDto })
  @ApiWrite()
  changeSettings(@IdParam('organizationId') organizationId: string, @Body() body: OrganizationSettingsDto): Promise<OrganizationSettings> {
    const settings = {
      ...(body.aiEnabled === undefined ? {} : { aiEnabled: body.aiEnabled }),
      ...(body.maxRunning === undefined ? {} : { maxRunning: body.maxRunning }),
    };
    return this.commands.execute(new ChangeOrganizationSettingsCommand(organizationId, settings));
  }

  /** The organization's balance, including the caller's own writes just made. */
  @Get('balance')
  @Roles('system', 'auditor', 'org_admin')
  @ApiOperation({
    summary: 'An organization’s balance',
    description: 'Integer credits: granted, adjustments, held, charged, available (derived) and running invocations.',
  })
  @ApiOkResponse({ type: OrganizationBalanceDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such organization, or not the caller’s.')
  async balance(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string): Promise<OrganizationBalanceDto> {
    // Another organization's balance reads exactly like one that does not exist.
    if (!mayAccessOrganization(caller, organizationId)) throw new ResourceNotFoundException('organization', organizationId);
    const view = await this.reader.find(new GetBalanceQuery(organizationId));
    if (view === undefined) throw new ResourceNotFoundException('organization', organizationId);
    const { granted, adjustments, held, charged, available, running } = view;
    // With LEDGER_CREDIT_VALUE, the same figures in money beside them (docs/http.md "Money beside credits").
    return { organizationId, granted, adjustments, held, charged, available, running, ...moneyMember(this.config.creditValue, { granted, adjustments, held, charged, available }) };
  }
}
