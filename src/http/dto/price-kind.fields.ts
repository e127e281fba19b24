/**
 * The rate and usage fields of the DTOs, one per row of the price-kind table
 * (src/runtime/price-kinds.ts): declared in a loop, so the validation and the OpenAPI schema have
 * every kind the pricing has, and no other.
 */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PRICE_KINDS } from '../../runtime/price-kinds';
import { Optional, WholeNumber } from '../../http-kit/dto/field-rules';

/** The unit a rate's message and schema name: `credits per million tokens`, `credits per 1,000 searches`. */
export function rateUnit(kind: (typeof PRICE_KINDS)[number]): string {
  return kind.unit === 'tokens' ? 'credits per million tokens' : `credits per ${kind.unitsPerRate.toLocaleString('en-US')} ${kind.unit}`;
}

/**
 * Declares one validated integer rate field per kind on `dto`. With `fallbacks`, a kind whose row
 * has a fallback may be left out (a rate version); without, every rate is required (a long-context
 * set, which replaces only the replaceable kinds, passes `replaceableOnly`).
 */
export function declareRateFields(dto: abstract new () => object, options: { readonly fallbacks: boolean; readonly replaceableOnly: boolean }): void {
  for (const kind of PRICE_KINDS) {
    if (options.replaceableOnly && !kind.replaceable) continue;
    const optional = options.fallbacks && kind.fallback !== 'required';
    const target = dto.prototype as object;
    WholeNumber({ min: 0, max: kind.maxRate, unit: rateUnit(kind) })(target, kind.rate);
    if (optional) Optional()(target, kind.rate);
    (optional ? ApiPropertyOptional : ApiProperty)({ description: kind.rateDescription })(target, kind.rate);
  }
}

/** Declares one integer usage count per kind on a read view's DTO (documentation only). */
export function declareUsageFields(dto: abstract new () => object): void {
  for (const kind of PRICE_KINDS) {
    ApiProperty({ type: 'integer', minimum: 0, description: kind.usageDescription })(dto.prototype as object, kind.usage);
  }
}
