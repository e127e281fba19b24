import { ConflictException, Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { WEBHOOKS_CONFIG, type WebhooksConfig } from './webhooks.config';
import { CLOCK, isoAt } from '../domain/clock.token';
import { ValidationError } from '../domain/domain.errors';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import { UnknownOrganizationError } from '../invocations/invocation-errors';
import type { Clock } from '../runtime';
import { MAX_LISTED_DELIVERIES, MAX_WEBHOOKS_PER_ORGANIZATION, type DeliverableEventType } from './webhook.bounds';
import { registrationProblem } from './webhook-address.policy';
import { WEBHOOK_RESOLVER, type WebhookResolver } from './webhook-resolver';
import { newWebhookSecret } from './webhook-signature';
import { WebhookStore, type DeliveryView, type WebhookEndpoint } from './webhook.store';

/** Registering, listing and removing an organization's webhooks (README.md "Webhooks"). */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly webhooks: WebhookStore,
    private readonly repository: AggregateRepository,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(WEBHOOKS_CONFIG) private readonly config: WebhooksConfig,
    @Inject(WEBHOOK_RESOLVER) private readonly resolver: WebhookResolver,
  ) {}

  /**
   * Registers a webhook for the events committed from now on; the secret is returned here only. A
   * webhook is for an organization that exists (a grant or settings), never a way to create one.
   * Under the `public` address policy its host's name is resolved now, and refused unless every
   * address it has is public (each delivery checks again).
   */
  async register(organizationId: string, url: string, events: readonly DeliverableEventType[]): Promise<{ webhookId: string; secret: string }> {
    const addressProblem = await registrationProblem(url, this.config.webhookAddresses, this.resolver);
    if (addressProblem !== undefined) throw ValidationError.of('url', addressProblem);
    if (!(await this.repository.load(accountStreamName(organizationId), accountDecider)).state.exists) {
      throw new UnknownOrganizationError(organizationId);
    }
    if (this.webhooks.countActive(organizationId) >= MAX_WEBHOOKS_PER_ORGANIZATION) {
      throw new ConflictException(`an organization has at most ${MAX_WEBHOOKS_PER_ORGANIZATION} webhooks; delete one first`);
    }
    const webhookId = `wh_${randomUUID()}`;
    const secret = newWebhookSecret();
    const fromPosition = await this.eventStore.headPosition();
    this.webhooks.register({ webhookId, organizationId, url, events: [...new Set(events)], secret, createdAt: isoAt(this.clock), fromPosition });
    return { webhookId, secret };
  }

  list(organizationId: string): WebhookEndpoint[] {
    return this.webhooks.list(organizationId);
  }

  /** False when the organization has no such webhook. */
  delete(organizationId: string, webhookId: string): boolean {
    return this.webhooks.delete(organizationId, webhookId, isoAt(this.clock));
  }

  /** The webhook's most recent deliveries, or undefined when the organization has no such webhook. */
  deliveries(organizationId: string, webhookId: string): DeliveryView[] | undefined {
    if (this.webhooks.get(organizationId, webhookId) === undefined) return undefined;
    return this.webhooks.deliveries(webhookId, MAX_LISTED_DELIVERIES);
  }
}
