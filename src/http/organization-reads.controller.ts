import { moneyMember } from '../config/credit-value';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { Controller, Get, Headers, Inject, Query, Res } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { HttpResponse as Response } from '../http-kit/http.types';
import type { InvocationStatus } from '../invocations/invocation.events';
import { GetUsageQuery, type UsageGroupBy, type UsageStatement } from '../queries/get-usage.query';
import { ListInvocationsQuery, type InvocationPage } from '../queries/list-invocations.query';
import { ListLedgerEntriesQuery, type LedgerEntryPage, type LedgerOrder } from '../queries/list-ledger-entries.query';
import { ApiAuthenticatedErrors, ApiInvalidRequest, ApiNotFound, ApiUnavailable } from '../http-kit/api-docs.decorators';
import { mayAccessOrganization, type Caller } from '../http-kit/auth/caller';
import { CurrentCaller } from '../http-kit/auth/current-caller.decorator';
import { Roles } from '../http-kit/auth/roles.decorator';
import { LedgerQueryDto, ListInvocationsQueryDto, UsageQueryDto } from './dto/statement-queries.dto';
import { ResourceNotFoundException } from '../http-kit/http-error.body';
import { IdParam } from '../http-kit/id-param.pipe';
import { usageStatementCsv } from './usage-statement.csv';
import { LedgerApi } from '../http-kit/ledger-api.decorator';

/**
 * What finance reads about an organization (docs/http.md; README.md "Invoicing"): its invocations, its
 * ledger entries and its usage statement. Each route executes the QueryBus query a NestJS product would
 * (docs/embedding.md).
 */
@ApiTags('organizations')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@LedgerApi()
@Controller('v1/organizations/:organizationId')
export class OrganizationReadsController {
  constructor(
    private readonly queries: QueryBus,
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
  ) {}

  @Get('invocations')
  @Roles('system', 'auditor', 'org_admin', 'org_member')
  @ApiOperation({
    summary: 'List an organization’s invocations',
    description:
      'Newest first (by estimate time), filtered by `operationId`, `state`, `from` (included), `to` (excluded), and for gateway calls `user`, `tag` and `team`; ' +
      'at most `limit` (≤ 500) per page. Follow `nextCursor` for the next page: pages never repeat or skip an invocation, whatever is written meanwhile.',
  })
  @ApiOkResponse({ description: '`{ invocations: [{ invocationId, operationId, gateway?: { keyId, keyName, model, teamId?, userId?, tags? }, state, outcome?, refusalReason?, publicationVersion?, estimate, charge, estimatedAt, settledAt? }], nextCursor }`' })
  @ApiInvalidRequest()
  @ApiNotFound('Not the caller’s organization.')
  invocations(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @Query() query: ListInvocationsQueryDto,
  ): Promise<InvocationPage> {
    this.assertAccess(caller, organizationId);
    return this.run(
      new ListInvocationsQuery(organizationId, {
        ...(query.operationId === undefined ? {} : { operationId: query.operationId }),
        ...(query.state === undefined ? {} : { state: query.state as InvocationStatus }),
        ...(query.from === undefined ? {} : { from: query.from }),
        ...(query.to === undefined ? {} : { to: query.to }),
        ...(query.user === undefined ? {} : { user: query.user }),
        ...(query.tag === undefined ? {} : { tag: query.tag }),
        ...(query.team === undefined ? {} : { team: query.team }),
        ...(query.limit === undefined ? {} : { limit: Number(query.limit) }),
        ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
      }),
    );
  }

  @Get('ledger')
  @Roles('system', 'auditor', 'org_admin')
  @ApiOperation({
    summary: 'An organization’s ledger entries',
    description:
      'Every grant, adjustment, hold, charge and release in the account’s order (or newest first with `order=newest`), each naming its ' +
      'invocation or idempotency key, with the available credits after it; paged with `limit` (≤ 500) and the opaque `nextCursor`.',
  })
  @ApiOkResponse({ description: '`{ entries: [{ sequence, kind, credits, invocationId?, idempotencyKey?, reason?, at, availableAfter }], nextCursor }`' })
  @ApiInvalidRequest()
  @ApiNotFound('Not the caller’s organization.')
  ledger(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string, @Query() query: LedgerQueryDto): Promise<LedgerEntryPage> {
    this.assertAccess(caller, organizationId);
    return this.run(
      new ListLedgerEntriesQuery(organizationId, {
        ...(query.limit === undefined ? {} : { limit: Number(query.limit) }),
        ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
        ...(query.order === undefined ? {} : { order: query.order as LedgerOrder }),
      }),
    );
  }

  @Get('usage')
  @Roles('system', 'auditor', 'org_admin')
  @ApiOperation({
    summary: 'An organization’s usage statement',
    description:
      'Credits charged (on the day of settlement), invocations by outcome and refusal reason, and usage by kind, for the UTC days `from`–`to` ' +
      '(both included, at most 366), grouped by any of `operation`, `model`, `day`, `key` (a gateway call\'s key), `team`, `user` (its `metadata.user_id`), `tag` (each of its `x-ledger-tags`). With LEDGER_CREDIT_VALUE, each row has `money`. `Accept: text/csv` gives the same rows as CSV, text cells never read as spreadsheet formulas.',
  })
  @ApiProduces('application/json', 'text/csv')
  @ApiOkResponse({ description: '`{ organizationId, from, to, groupBy, rows: [{ day?, operationId?, model?, keyId?, keyName?, teamId?, userId?, tag?, credits, money?, settled, outcomes, refused, refusals, tokens, usageSaturated? }], totals }`' })
  @ApiInvalidRequest()
  @ApiNotFound('Not the caller’s organization.')
  async usage(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @Query() query: UsageQueryDto,
    @Headers('accept') accept: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<UsageStatement | string> {
    this.assertAccess(caller, organizationId);
    const groupBy = (Array.isArray(query.groupBy) ? query.groupBy : query.groupBy === undefined ? [] : [query.groupBy])
      .flatMap((value) => value.split(','))
      .filter((value) => value.length > 0) as UsageGroupBy[];
    const statement = await this.run<UsageStatement>(new GetUsageQuery(organizationId, { from: query.from as string, to: query.to as string, groupBy }));
    if (!wantsCsv(accept)) return this.withMoney(statement);
    response.header('Content-Type', 'text/csv; charset=utf-8');
    return usageStatementCsv(statement);
  }

  /** Each row and the totals with their credits in money beside them, when LEDGER_CREDIT_VALUE is set. */
  private withMoney(statement: UsageStatement): UsageStatement {
    const value = this.config.creditValue;
    if (value === undefined) return statement;
    const priced = <R extends { readonly credits: number }>(row: R): R => ({ ...row, ...moneyMember(value, { credits: row.credits }) });
    return { ...statement, rows: statement.rows.map(priced), totals: priced(statement.totals) };
  }

  private assertAccess(caller: Caller, organizationId: string): void {
    // Another organization's reads answer exactly like an unknown organization's.
    if (!mayAccessOrganization(caller, organizationId)) throw new ResourceNotFoundException('organization', organizationId);
  }

  // ReadModelsUnavailableError leaves as 503 through HttpErrorFilter.
  private async run<T>(query: ListInvocationsQuery | ListLedgerEntriesQuery | GetUsageQuery): Promise<T> {
    return (await this.queries.execute(query)) as T;
  }
}

/** CSV when the client prefers it over JSON (a plain `text/csv`, or listed before `application/json`). */
function wantsCsv(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const types = accept.split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  const csv = types.indexOf('text/csv');
  const json = types.findIndex((type) => type === 'application/json' || type === '*/*');
  return csv !== -1 && (json === -1 || csv < json);
}
