import { applyDecorators, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { BearerTokenGuard } from './auth/bearer-token.guard';
import { BodyErrorGuard } from './body-error.guard';
import { HttpErrorFilter } from './http-error.filter';
import { ledgerValidationPipe } from './validation.pipe';

/**
 * Puts a controller of the ledger's API under the ledger's rules: the bearer-token guard (then the
 * refused-body guard, so a bad body is only reported to a caller with a valid token), the
 * validation pipe, and the one error shape. Bound to each ledger controller rather than to the whole
 * application, so an application that embeds the ledger with its HTTP API on keeps its own routes
 * under its own guards, pipes and filters.
 */
export function LedgerApi(): ClassDecorator {
  return applyDecorators(UseGuards(BearerTokenGuard, BodyErrorGuard), UsePipes(ledgerValidationPipe()), UseFilters(HttpErrorFilter));
}
