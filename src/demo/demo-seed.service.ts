import { Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { CommandBus } from '@nestjs/cqrs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GrantCreditsCommand } from '../accounts/account-commands';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { operationDecider, publicationInForce } from '../catalog/operation.decider';
import { operationStreamName, type Publication } from '../catalog/operation.events';
import { PublishOperationCommand } from '../catalog/publish-operation.command';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { IdempotencyConflictError } from '../domain/domain.errors';
import { TokenRegistry } from '../http-kit/auth/token-registry';
import { HTTP_ROUTE_PREFIX } from '../http-kit/http-route-prefix';
import { demoBanner } from './demo-banner';
import {
  DEMO_GRANT_CREDITS,
  DEMO_GRANT_IDEMPOTENCY_KEY,
  DEMO_GRANT_REASON,
  DEMO_OPERATION_ID,
  DEMO_ORGANIZATION_ID,
  DEMO_TOKENS,
  demoPublication,
} from './demo-catalog';

/** Where the demo banner goes: standard output, or a test's collector. */
export const DEMO_OUTPUT = Symbol('DEMO_OUTPUT');
export type DemoOutput = (text: string) => void;

/** What seeding found and did. */
export interface DemoSeedReport {
  readonly publication: Publication;
  /** False when a publication existed already and was kept as it was. */
  readonly published: boolean;
  /** False when the grant's idempotency key had been used before: nothing was granted again. */
  readonly granted: boolean;
  /** Demo tokens added; a token already configured in LEDGER_TOKENS keeps its own grant and is not listed. */
  readonly tokens: ReadonlyArray<{ readonly role: string; readonly token: string; readonly organizationId?: string }>;
}

/**
 * `LEDGER_DEMO=1` (README.md "The demo"): seeds the demo on start and prints how to try it. Seeding
 * only adds: `demo.arithmetic` is published only when it never was, the organization's grant carries a
 * fixed idempotency key so it happens once per store, and demo tokens are added beside LEDGER_TOKENS. A
 * restart therefore keeps the demo's history and whatever an operator changed since.
 */
@Injectable()
export class DemoSeedService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Demo');

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly commands: CommandBus,
    private readonly repository: AggregateRepository,
    private readonly tokens: TokenRegistry,
    private readonly adapterHost: HttpAdapterHost,
    @Inject(DEMO_OUTPUT) private readonly output: DemoOutput,
    @Optional() @Inject(HTTP_ROUTE_PREFIX) private readonly routePrefix: string = '',
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.demo) return;
    const report = await this.seed();
    this.logger.warn({
      message: 'LEDGER_DEMO is on: the well-known demo tokens are accepted. Never enable it on real data.',
      published: report.published,
      granted: report.granted,
      demoTokens: report.tokens.length,
    });
    this.announceWhenListening(report);
  }

  /** Publishes, grants and adds tokens as far as each is still missing; returns what it found and did. */
  async seed(): Promise<DemoSeedReport> {
    const { publication, published } = await this.ensurePublication();
    const granted = await this.ensureGrant();
    const tokens = DEMO_TOKENS.filter(({ token, grant }) => this.tokens.addIfAbsent(token, grant)).map(({ token, grant }) => ({
      role: grant.role,
      token,
      ...(grant.organizationId === undefined ? {} : { organizationId: grant.organizationId }),
    }));
    return { publication, published, granted, tokens };
  }

  private async ensurePublication(): Promise<{ publication: Publication; published: boolean }> {
    const stream = operationStreamName(DEMO_OPERATION_ID);
    const existing = publicationInForce((await this.repository.load(stream, operationDecider)).state);
    if (existing !== undefined) {
      if (this.config.anthropicApiKey !== undefined && existing.routing.provider !== 'anthropic') {
        // Never overwrite the catalog: an operator republishes deliberately (PUT …/publications).
        this.logger.log({ message: `${DEMO_OPERATION_ID} keeps its published routing`, routing: existing.routing });
      }
      return { publication: existing, published: false };
    }
    await this.commands.execute(
      new PublishOperationCommand(DEMO_OPERATION_ID, demoPublication(this.config.anthropicApiKey === undefined ? 'scripted' : 'anthropic')),
    );
    const publication = publicationInForce((await this.repository.load(stream, operationDecider)).state);
    if (publication === undefined) throw new Error(`${DEMO_OPERATION_ID} has no publication after publishing it`);
    return { publication, published: true };
  }

  private async ensureGrant(): Promise<boolean> {
    try {
      const result = await this.commands.execute(
        new GrantCreditsCommand(DEMO_ORGANIZATION_ID, DEMO_GRANT_CREDITS, DEMO_GRANT_REASON, DEMO_GRANT_IDEMPOTENCY_KEY),
      );
      return !result.repeated;
    } catch (error) {
      // The key was used for another entry (an older demo's amount): the organization is funded already.
      if (error instanceof IdempotencyConflictError) return false;
      throw error;
    }
  }

  /** Prints the banner once the server listens, with the port it really got. */
  private announceWhenListening(report: DemoSeedReport): void {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (server === undefined) return;
    const announce = (): void => {
      const address = server.address();
      const port = address !== null && typeof address === 'object' ? (address as AddressInfo).port : this.config.port;
      this.output(
        demoBanner({
          baseUrl: `http://localhost:${port}`,
          routePrefix: this.routePrefix,
          operationId: DEMO_OPERATION_ID,
          organizationId: DEMO_ORGANIZATION_ID,
          tokens: report.tokens,
          routing: `${report.publication.routing.provider}/${report.publication.routing.model} (version ${report.publication.version})`,
        }),
      );
    };
    if (server.listening) announce();
    else server.once('listening', announce);
  }
}
