import { Body, Controller, Get, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAuthenticatedErrors, ApiInvalidRequest, ApiNotFound, ApiUnavailable, ApiWrite } from '../http-kit/api-docs.decorators';
import type { Caller } from '../http-kit/auth/caller';
import { CurrentCaller } from '../http-kit/auth/current-caller.decorator';
import { Roles } from '../http-kit/auth/roles.decorator';
import { IdParam } from '../http-kit/id-param.pipe';
import { LedgerApi } from '../http-kit/ledger-api.decorator';
import { GatewayAdmin } from './gateway-admin.service';
import { PricedModelDto, PriceGatewayModelDto } from './gateway-admin.dto';
import type { RateCardVersion } from './rate-card';

/**
 * The gateway's rate card (docs/gateway.md): each model's prices, versioned with windows. Operators and
 * auditors read all of it. An organization's administrator reads the models enabled now, every
 * version of each: a key they issue may be allowed any enabled model, so those are the prices they
 * size its limit by; a disabled model is not found for them, as it is for a key's caller.
 */
@ApiTags('gateway')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@LedgerApi()
@Controller('v1/gateway/models')
export class RateCardController {
  constructor(private readonly gateway: GatewayAdmin) {}

  @Put(':model')
  @Roles('system')
  @ApiOperation({ summary: 'Price a model', description: 'The model’s next rate card version; calls admitted from now on are held and priced at it.' })
  @ApiOkResponse({ type: PricedModelDto })
  @ApiWrite()
  price(@IdParam('model') model: string, @Body() body: PriceGatewayModelDto): Promise<{ model: string; version: number }> {
    return this.gateway.priceModel(model, { ...body });
  }

  @Get()
  @Roles('system', 'auditor', 'org_admin')
  @ApiOperation({
    summary: 'The rate card',
    description: 'Every model with every version, each window starting at its `pricedAt`; for an organization’s administrator, the models enabled now.',
  })
  @ApiOkResponse({ description: '`{ models: [{ model, versions }] }`.' })
  @ApiInvalidRequest()
  async list(@CurrentCaller() caller: Caller): Promise<{ models: readonly { model: string; versions: readonly RateCardVersion[] }[] }> {
    return { models: await this.gateway.rateCard(enabledOnly(caller)) };
  }

  @Get(':model')
  @Roles('system', 'auditor', 'org_admin')
  @ApiOperation({
    summary: 'A model’s rate card versions',
    description: 'Every version of the model’s prices, oldest first, each window starting at its `pricedAt`; for an organization’s administrator, an enabled model’s only.',
  })
  @ApiOkResponse({ description: '`{ model, versions }`, oldest first.' })
  @ApiInvalidRequest()
  @ApiNotFound('The model is not on the rate card (for an organization’s administrator: not enabled now).')
  modelVersions(@CurrentCaller() caller: Caller, @IdParam('model') model: string): Promise<{ model: string; versions: readonly RateCardVersion[] }> {
    return this.gateway.rateCardOf(model, enabledOnly(caller));
  }
}

/** An organization's administrator reads the enabled models only (the class's comment says why). */
const enabledOnly = (caller: Caller): boolean => caller.role === 'org_admin';
