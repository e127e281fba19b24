import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ApiRequestErrors } from '../http-kit/api-docs.decorators';
import type { Caller } from '../http-kit/auth/caller';
import { CurrentCaller } from '../http-kit/auth/current-caller.decorator';
import { Roles } from '../http-kit/auth/roles.decorator';
import { ErrorBodyDto } from '../http-kit/dto/error-body.dto';
import { LedgerApi } from '../http-kit/ledger-api.decorator';
import { MeDto } from './dto/me.dto';

/**
 * Who the bearer token is: its role and organization. The console checks a token with it at sign-in
 * and sends each role where it works. It reads neither the log nor the read models, so it never
 * answers 503, and every role may call it, so it never answers 403.
 */
@ApiTags('me')
@ApiBearerAuth()
@ApiUnauthorizedResponse({ type: ErrorBodyDto, description: 'No token, a malformed header, or an unknown token.' })
@ApiRequestErrors()
@LedgerApi()
@Controller('v1/me')
export class MeController {
  @Get()
  @Roles('system', 'auditor', 'org_admin', 'org_member')
  @ApiOperation({ summary: 'Who the token is', description: 'The role the bearer token grants and, for `org_admin` and `org_member`, the organization it acts for.' })
  @ApiOkResponse({ type: MeDto })
  me(@CurrentCaller() caller: Caller): MeDto {
    return caller.organizationId === undefined ? { role: caller.role } : { role: caller.role, organizationId: caller.organizationId };
  }
}
