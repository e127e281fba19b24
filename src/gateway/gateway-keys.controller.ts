import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Inject, Patch, Post } from '@nestjs/common';
import { moneyMember } from '../config/credit-value';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAuthenticatedErrors, ApiDeleteWrite, ApiInvalidRequest, ApiNotFound, ApiUnavailable, ApiWrite } from '../http-kit/api-docs.decorators';
import { mayAccessOrganization, type Caller } from '../http-kit/auth/caller';
import { CurrentCaller } from '../http-kit/auth/current-caller.decorator';
import { Roles } from '../http-kit/auth/roles.decorator';
import { ResourceNotFoundException } from '../http-kit/http-error.body';
import { IdParam } from '../http-kit/id-param.pipe';
import { LedgerApi } from '../http-kit/ledger-api.decorator';
import { GatewayAdmin, type GatewayKeyView } from './gateway-admin.service';
import { GatewayKeyDto, GatewayKeySettingsDto, IssuedGatewayKeyDto, RotateGatewayKeyDto } from './gateway-admin.dto';

/** An organization's gateway keys (docs/gateway.md). */
@ApiTags('gateway')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@Roles('system', 'org_admin')
@LedgerApi()
@Controller('v1/organizations/:organizationId/gateway-keys')
export class GatewayKeysController {
  constructor(
    private readonly gateway: GatewayAdmin,
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
  ) {}

  @Post()
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Issue a gateway key', description: 'The key (`llk_…`) is in this answer only; the log keeps its SHA-256.' })
  @ApiOkResponse({ type: IssuedGatewayKeyDto })
  @ApiWrite()
  @ApiNotFound('No such organization, or not the caller’s.')
  issue(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string, @Body() body: GatewayKeySettingsDto): Promise<GatewayKeyView & { key: string }> {
    this.scope(caller, organizationId);
    return this.gateway.issueKey(organizationId, { ...body });
  }

  @Get()
  @ApiOperation({ summary: 'List the gateway keys', description: 'Every key, revoked ones included, without the key: what each spent in its current period and what it holds.' })
  @ApiOkResponse({ type: [GatewayKeyDto] })
  @ApiInvalidRequest()
  @ApiNotFound('No such organization, or not the caller’s.')
  async list(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string): Promise<{ keys: readonly GatewayKeyView[] }> {
    this.scope(caller, organizationId);
    // With LEDGER_CREDIT_VALUE, each key's spend and holds in money beside them (docs/http.md "Money beside credits").
    const keys = await this.gateway.listKeys(organizationId);
    return { keys: keys.map((key) => ({ ...key, ...moneyMember(this.config.creditValue, { spentCredits: key.spentCredits, heldCredits: key.heldCredits }) })) };
  }

  @Patch(':keyId')
  @ApiOperation({ summary: 'Change a gateway key', description: 'Replaces its settings whole: a cap or limit left out is removed.' })
  @ApiOkResponse({ type: GatewayKeyDto })
  @ApiWrite()
  @ApiNotFound('No such organization or live key, or not the caller’s.')
  change(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @IdParam('keyId') keyId: string,
    @Body() body: GatewayKeySettingsDto,
  ): Promise<GatewayKeyView> {
    this.scope(caller, organizationId);
    return this.gateway.changeKey(organizationId, keyId, { ...body });
  }

  @Post(':keyId/rotate')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary: 'Rotate a gateway key’s secret',
    description: 'A new secret (`llk_…`, in this answer only) for the same key: same id, spend and limits. The old secret works `graceSeconds` more, then is refused (401).',
  })
  @ApiOkResponse({ type: IssuedGatewayKeyDto })
  @ApiWrite()
  @ApiNotFound('No such organization or live key, or not the caller’s.')
  rotate(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @IdParam('keyId') keyId: string,
    @Body() body: RotateGatewayKeyDto,
  ): Promise<GatewayKeyView & { key: string }> {
    this.scope(caller, organizationId);
    return this.gateway.rotateKey(organizationId, keyId, { ...body });
  }

  @Delete(':keyId')
  @ApiOperation({ summary: 'Revoke a gateway key', description: 'Refused from now on by every instance on the log: admission reads the account stream.' })
  @ApiOkResponse({ type: GatewayKeyDto })
  @ApiDeleteWrite('A concurrent change to the same record won every retry; the request may be repeated.')
  @ApiNotFound('No such organization or key, or not the caller’s.')
  revoke(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string, @IdParam('keyId') keyId: string): Promise<GatewayKeyView> {
    this.scope(caller, organizationId);
    return this.gateway.revokeKey(organizationId, keyId);
  }

  private scope(caller: Caller, organizationId: string): void {
    if (!mayAccessOrganization(caller, organizationId)) throw new ResourceNotFoundException('organization', organizationId);
  }
}
