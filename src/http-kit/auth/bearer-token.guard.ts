import { CanActivate, ExecutionContext, ForbiddenException, Injectable, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { headerOf, type HttpResponse as Response } from '../http.types';
import type { Role } from '../../config/ledger.config';
import { contextOf, type LedgerRequest } from '../request-context';
import { PUBLIC_METADATA, ROLES_METADATA } from './roles.decorator';
import { TokenRegistry } from './token-registry';

/** Longest bearer token accepted, in characters; anything longer is malformed, not looked up. */
export const MAX_BEARER_TOKEN_CHARS = 512;
// RFC 6750 b64token: the only characters a bearer token may hold. The scheme name is case-insensitive (RFC 7235).
const BEARER_HEADER = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * Authenticates `Authorization: Bearer <token>` against the TokenRegistry and authorises the route's
 * roles: 401 for a missing, malformed or unknown token; 403 for a known token whose role the route
 * does not allow. Which organization's data a token may see is decided by the route (404, never 403,
 * for another organization's resources).
 */
@Injectable()
export class BearerTokenGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: TokenRegistry,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_METADATA, targets) === true) return true;

    const http = context.switchToHttp();
    const request = http.getRequest<LedgerRequest>();
    const response = http.getResponse<Response>();
    const header = headerOf(request, 'authorization');
    if (header === undefined) return this.unauthorized(response, 'a bearer token is required', false);
    const match = header.length <= MAX_BEARER_TOKEN_CHARS + 'Bearer '.length ? BEARER_HEADER.exec(header) : null;
    if (match === null) return this.unauthorized(response, 'the Authorization header must be "Bearer <token>"', true);
    const grant = this.tokens.grantFor(match[1]!);
    if (grant === undefined) return this.unauthorized(response, 'the bearer token is not valid', true);

    contextOf(request).caller = grant;
    const allowed = this.reflector.getAllAndOverride<readonly Role[] | undefined>(ROLES_METADATA, targets) ?? [];
    if (!allowed.includes(grant.role)) throw new ForbiddenException(`role ${grant.role} may not use this route`);
    return true;
  }

  private unauthorized(response: Response, message: string, invalidToken: boolean): never {
    // RFC 6750 §3: tell the client which scheme to use, and whether the token it sent was the problem.
    response.header('WWW-Authenticate', invalidToken ? 'Bearer realm="llm-ledger", error="invalid_token"' : 'Bearer realm="llm-ledger"');
    throw new UnauthorizedException(message);
  }
}
