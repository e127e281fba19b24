import { SetMetadata } from '@nestjs/common';
import type { Role } from '../../config/ledger.config';

export const ROLES_METADATA = 'llm-ledger:roles';
export const PUBLIC_METADATA = 'llm-ledger:public';

/**
 * The roles allowed on a route (docs/http.md "Listening, tokens, roles"). A valid token of another role
 * gets 403. A route with neither @Roles nor @Public is refused to everyone: access is never granted by
 * omission.
 */
export const Roles = (...roles: readonly Role[]): MethodDecorator & ClassDecorator => SetMetadata(ROLES_METADATA, roles);

/** A route served without a token (health probes). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_METADATA, true);
