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
import { GatewayTeamDto, GatewayTeamListDto, GatewayTeamSettingsDto } from './gateway-teams.dto';
import { GatewayTeams, type GatewayTeamView } from './gateway-teams.service';

/** An organization's gateway teams (docs/gateway.md "Teams"): the same roles as its keys. */
@ApiTags('gateway')
@ApiBearerAuth()
@ApiAuthenticatedErrors()
@ApiUnavailable()
@Roles('system', 'org_admin')
@LedgerApi()
@Controller('v1/organizations/:organizationId/teams')
export class GatewayTeamsController {
  constructor(
    private readonly teams: GatewayTeams,
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
  ) {}

  @Post()
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Create a gateway team', description: 'A spend limit shared by the keys that name the team (`teamId` on a key).' })
  @ApiOkResponse({ type: GatewayTeamDto })
  @ApiWrite()
  @ApiNotFound('No such organization, or not the caller’s.')
  create(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string, @Body() body: GatewayTeamSettingsDto): Promise<GatewayTeamView> {
    this.scope(caller, organizationId);
    return this.teams.createTeam(organizationId, { ...body });
  }

  @Get()
  @ApiOperation({ summary: 'List the gateway teams', description: 'Every team: its live keys, what they spent in the team’s current period and what they hold.' })
  @ApiOkResponse({ type: GatewayTeamListDto })
  @ApiInvalidRequest()
  @ApiNotFound('No such organization, or not the caller’s.')
  async list(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string): Promise<{ teams: readonly GatewayTeamView[] }> {
    this.scope(caller, organizationId);
    // With LEDGER_CREDIT_VALUE, each team's spend and holds in money beside them (docs/http.md "Money beside credits").
    const teams = await this.teams.listTeams(organizationId);
    return { teams: teams.map((team) => ({ ...team, ...moneyMember(this.config.creditValue, { spentCredits: team.spentCredits, heldCredits: team.heldCredits }) })) };
  }

  @Patch(':teamId')
  @ApiOperation({ summary: 'Change a gateway team', description: 'Replaces its settings whole: a limit or alerts left out are removed.' })
  @ApiOkResponse({ type: GatewayTeamDto })
  @ApiWrite()
  @ApiNotFound('No such organization or team, or not the caller’s.')
  change(
    @CurrentCaller() caller: Caller,
    @IdParam('organizationId') organizationId: string,
    @IdParam('teamId') teamId: string,
    @Body() body: GatewayTeamSettingsDto,
  ): Promise<GatewayTeamView> {
    this.scope(caller, organizationId);
    return this.teams.changeTeam(organizationId, teamId, { ...body });
  }

  @Delete(':teamId')
  @ApiOperation({ summary: 'Delete a gateway team', description: 'Refused (409) while a live key names it: change those keys’ `teamId` or revoke them first.' })
  @ApiOkResponse({ type: GatewayTeamDto })
  @ApiDeleteWrite('A live key still names the team, or a concurrent change won every retry.')
  @ApiNotFound('No such organization or team, or not the caller’s.')
  remove(@CurrentCaller() caller: Caller, @IdParam('organizationId') organizationId: string, @IdParam('teamId') teamId: string): Promise<GatewayTeamView> {
    this.scope(caller, organizationId);
    return this.teams.deleteTeam(organizationId, teamId);
  }

  private scope(caller: Caller, organizationId: string): void {
    if (!mayAccessOrganization(caller, organizationId)) throw new ResourceNotFoundException('organization', organizationId);
  }
}
