import { Body, Controller, Get, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAuthenticatedErrors, ApiInvalidRequest, ApiNotFound, ApiUnavailable, ApiWrite } from '../http-kit/api-docs.decorators';
import { Roles } from '../http-kit/auth/roles.decorator';
import { IdParam } from '../http-kit/id-param.pipe';
import { LedgerApi } from '../http-kit/ledger-api.decorator';
import { GatewayAdmin } from './gateway-admin.service';
import { PricedModelDto, PriceGatewayModelDto } from './gateway-admin.dto';
import type { RateCardVersion } from './rate-card';

/** The gateway's rate card (docs/gateway.md): each model's prices, versioned with windows. */
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
  @Roles('system', 'auditor')
  @ApiOperation({ summary: 'The rate card', description: 'Every model with every version, each window starting at its `pricedAt`.' })
  @ApiOkResponse({ description: '`{ models: [{ model, versions }] }`.' })
  @ApiInvalidRequest()
  async list(): Promise<{ models: readonly { model: string; versions: readonly RateCardVersion[] }[] }> {
    return { models: await this.gateway.rateCard() };
  }

  @Get(':model')
  @Roles('system', 'auditor')
  @ApiOperation({ summary: 'A model’s rate card versions', description: 'Every version of the model’s prices, oldest first, each window starting at its `pricedAt`.' })
  @ApiOkResponse({ description: '`{ model, versions }`, oldest first.' })
  @ApiInvalidRequest()
  @ApiNotFound('The model is not on the rate card.')
  modelVersions(@IdParam('model') model: string): Promise<{ model: string; versions: readonly RateCardVersion[] }> {
    return this.gateway.rateCardOf(model);
  }
}
