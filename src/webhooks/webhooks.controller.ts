import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAuthenticatedErrors, ApiInvalidRequest, ApiNotFound, ApiUnavailable, ApiWrite } from '../http-kit/api-docs.decorators';
import { mayAccessOrganization, type Caller } from '../http-kit/auth/caller';
import { CurrentCaller } from '../http-kit/auth/current-caller.decorator';
import { Roles } from '../http-kit/auth/roles.decorator';
import { ResourceNotFoundException } from '../http-kit/http-error.body';
import { IdParam } from '../http-kit/id-param.pipe';
import { DeliveryListDto, RegisteredWebhookDto, RegisterWebhookDto, WebhookListDto } from './webhooks.dto';
import { WebhooksService } from './webhooks.service';
import type { DeliveryView, WebhookEndpoint } from './webhook.store';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/** An organization's webhooks and their deliveries (README.md "Webhooks"). */
@ApiTags('webhooks')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@Roles('system', 'org_admin')
@LedgerApi()
@Controller('v1/organizations/:organizationId/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary: 'Register a webhook',
    description:
      'Each event of the listed types committed from now on is POSTed to the URL as { deliveryId, type, organizationId, ' +
      'occurredAt, data }, with Ledger-Delivery and Ledger-Signature (t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>). ' +
      'The secret is in this answer only.',
  })
  @ApiOkResponse({ type: RegisteredWebhookDto })
  @ApiWrite('The organization already has the most webhooks allowed.')
  @ApiUnavailable()
  @ApiNotFound('No such organization, or not the caller’s.')
  register(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @Body() body: RegisterWebhookDto,
  ): Promise<{ webhookId: string; secret: string }> {
    this.scope(caller, organizationId);
    return this.webhooks.register(organizationId, body.url, body.events);
  }

  @Get()
  @ApiOperation({ summary: 'List the webhooks', description: 'Every webhook of the organization, without its secret.' })
  @ApiOkResponse({ type: WebhookListDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such organization, or not the caller’s.')
  list(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string): { webhooks: WebhookEndpoint[] } {
    this.scope(caller, organizationId);
    return { webhooks: this.webhooks.list(organizationId) };
  }

  @Delete(':webhookId')
  @HttpCode(HttpStatus.NO_CONTENT)
  @ApiOperation({ summary: 'Delete a webhook', description: 'Nothing more is delivered to it; deliveries still pending are cancelled.' })
  @ApiNoContentResponse()
  @ApiInvalidRequest()
  @ApiNotFound('No such webhook, or not the caller’s.')
  remove(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @IdParam('webhookId') webhookId: string,
  ): void {
    this.scope(caller, organizationId);
    if (!this.webhooks.delete(organizationId, webhookId)) throw new ResourceNotFoundException('webhook', webhookId);
  }

  @Get(':webhookId/deliveries')
  @ApiOperation({
    summary: 'List a webhook’s deliveries',
    description: 'The most recent deliveries first, each with its attempts and its status: pending, delivered, dead_lettered or cancelled.',
  })
  @ApiOkResponse({ type: DeliveryListDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such webhook, or not the caller’s.')
  deliveries(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @IdParam('webhookId') webhookId: string,
  ): { deliveries: DeliveryView[] } {
    this.scope(caller, organizationId);
    const deliveries = this.webhooks.deliveries(organizationId, webhookId);
    if (deliveries === undefined) throw new ResourceNotFoundException('webhook', webhookId);
    return { deliveries };
  }

  /** Another organization's webhooks read exactly like ones that do not exist. */
  private scope(caller: Caller, organizationId: string): void {
    if (!mayAccessOrganization(caller, organizationId)) throw new ResourceNotFoundException('organization', organizationId);
  }
}
