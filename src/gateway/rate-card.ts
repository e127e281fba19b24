/**
 * The gateway's rate card (docs/gateway.md): what a model's calls cost, versioned like publications.
 * One stream, `gateway-rate-card`, holds every model's versions: writes are rare operator actions and
 * the state is small (models × versions), so admission reads it from one cached aggregate, and the
 * models list needs no index. A version is never edited; each change is a new one.
 */
import { readPrices } from '../catalog/publication.validation';
import type { Decider, DomainCommand, DomainEvent } from '../domain/decider';
import { DomainError, ValidationError } from '../domain/domain.errors';
import { FieldChecks } from '../domain/field-checks';
import { BASIS_POINTS_PER_MULTIPLE, type GatewayPrices } from '../runtime/conversation.types';
import { RATE_FIELDS } from '../runtime/price-kinds';

export const RATE_CARD_STREAM = 'gateway-rate-card';
/** Models the rate card may hold. */
export const MAX_RATE_CARD_MODELS = 1_000;
/** Longest model name, in characters (Anthropic's own ids are far shorter). */
export const MAX_GATEWAY_MODEL_CHARS = 200;
/** Largest `max_tokens` a rate card may allow, in tokens. */
export const MAX_GATEWAY_OUTPUT_TOKENS = 1_000_000;
/** Longest a gateway call may take, upstream stream included: ten minutes. */
export const MAX_GATEWAY_ATTEMPT_TIMEOUT_MS = 600_000;
/** Largest geography multiplier, in basis points (10×). */
export const MAX_GEO_BASIS_POINTS = 100_000;
/**
 * The bounds of `batchBasisPoints`, the Message Batches multiplier in basis points of the whole price:
 * at least 1 (a batch is never free), at most 10,000 (1×: a batch is never dearer than the same call,
 * which a batch's hold at batch rates relies on). Anthropic's half price is 5,000.
 */
export const MIN_BATCH_BASIS_POINTS = 1;
export const MAX_BATCH_BASIS_POINTS = BASIS_POINTS_PER_MULTIPLE;
/** Geographies one rate card version may price. */
export const MAX_GEOS = 20;
/** Largest default bound on one web-search tool's searches, when it sets no `max_uses`. */
export const MAX_WEB_SEARCH_USES_DEFAULT = 1_000;
/** What a web-search tool without `max_uses` may search when the card names no default. */
export const DEFAULT_WEB_SEARCH_MAX_USES = 10;
/** The most uses a server-tool allowance may admit in one call (`maxUses`). */
export const MAX_SERVER_TOOL_ALLOWANCE_USES = 100;
/** The most input tokens a server-tool allowance may name for one use's result or one tool's or server's definitions. */
export const MAX_SERVER_TOOL_ALLOWANCE_TOKENS = 1_000_000;

/** The server tools a request may use only when the card gives them an allowance: nothing in a request bounds their uses. */
export const ALLOWANCE_SERVER_TOOLS = ['codeExecution', 'mcpServers'] as const;
export type AllowanceServerTool = (typeof ALLOWANCE_SERVER_TOOLS)[number];

/**
 * What the hold assumes of one call's code execution or MCP tool calls, which Anthropic does not
 * bound by any field of the request: the operator's figures, stated on the card.
 */
export interface ServerToolAllowance {
  /** Uses in one call, all of the tool's kind together; each may start one more sampling step. */
  readonly maxUses: number;
  /** Input tokens one use's result may add to the context (stdout and files, an MCP tool's answer). */
  readonly resultTokensPerUse: number;
  /** Input tokens the definitions add beyond the body's bytes: per code-execution tool, per MCP server (the tools it lists). */
  readonly definitionTokens: number;
}

export type ServerToolAllowances = { readonly [K in AllowanceServerTool]?: ServerToolAllowance };

export interface RateCardVersion {
  readonly model: string;
  /** 1-based, per model. */
  readonly version: number;
  readonly prices: GatewayPrices;
  /** The largest `max_tokens` a call may ask for. */
  readonly maxOutputTokens: number;
  /** The call's time bound, its stream included. */
  readonly attemptTimeoutMs: number;
  /** Code execution and MCP servers are refused (400) unless this gives them an allowance. */
  readonly serverToolAllowances?: ServerToolAllowances;
  readonly enabled: boolean;
  /** ISO-8601; the start of this version's window (it ends where the next version's starts). */
  readonly pricedAt: string;
}

export type GatewayModelPriced = DomainEvent<'GatewayModelPriced', RateCardVersion>;
export type RateCardEvent = GatewayModelPriced;

export type PriceGatewayModel = DomainCommand<
  'PriceGatewayModel',
  {
    readonly model: string;
    readonly prices: unknown;
    readonly maxOutputTokens: unknown;
    readonly attemptTimeoutMs: unknown;
    readonly serverToolAllowances?: unknown;
    readonly enabled: unknown;
    readonly pricedAt: string;
  }
>;
export type RateCardCommand = PriceGatewayModel;

export interface RateCardState {
  /** model → its versions, oldest first. */
  readonly models: ReadonlyMap<string, readonly RateCardVersion[]>;
}

/** The model is not on the rate card: nothing is written. */
export class UnknownGatewayModelError extends DomainError {
  override readonly name = 'UnknownGatewayModelError';

  constructor(readonly model: string) {
    super('unknown_gateway_model', `model "${model}" is not on the gateway's rate card`);
  }
}

/** The version in force: the model's latest. */
export function rateCardInForce(state: RateCardState, model: string): RateCardVersion | undefined {
  const versions = state.models.get(model);
  return versions?.[versions.length - 1];
}

/** A rate card version's prices: a rate version, plus the optional fast rates, geography multipliers, search default and batch multiplier. */
export function readGatewayPrices(checks: FieldChecks, value: unknown): GatewayPrices {
  const pricesIn = checks.object('prices', value);
  refuseUnknown(checks, 'prices', pricesIn, [...RATE_FIELDS, 'longContext', 'fast', 'inferenceGeo', 'webSearchMaxUsesDefault', 'batchBasisPoints']);
  const base = readPrices(checks, 'prices', pricesIn);
  const fastIn = pricesIn.fast === undefined ? undefined : checks.object('prices.fast', pricesIn.fast);
  if (fastIn !== undefined) refuseUnknown(checks, 'prices.fast', fastIn, [...RATE_FIELDS, 'longContext']);
  const fast = fastIn === undefined ? undefined : readPrices(checks, 'prices.fast', fastIn);
  let inferenceGeo: Record<string, number> | undefined;
  if (pricesIn.inferenceGeo !== undefined) {
    const geos = Object.entries(checks.object('prices.inferenceGeo', pricesIn.inferenceGeo));
    if (geos.length > MAX_GEOS) checks.add('prices.inferenceGeo', `must name at most ${MAX_GEOS} geographies`);
    inferenceGeo = {};
    for (const [geo, basisPoints] of geos.slice(0, MAX_GEOS)) {
      if (!/^[a-z][a-z0-9_-]{0,31}$/.test(geo)) checks.add(`prices.inferenceGeo.${geo}`, 'must be a geography name: lower-case letters, digits, _ and -');
      // A geography is never cheaper than the ordinary rates: the worst-case hold relies on it.
      inferenceGeo[geo] = checks.integer(`prices.inferenceGeo.${geo}`, basisPoints, { min: BASIS_POINTS_PER_MULTIPLE, max: MAX_GEO_BASIS_POINTS, unit: 'basis points' });
    }
  }
  const webSearchMaxUsesDefault =
    pricesIn.webSearchMaxUsesDefault === undefined
      ? undefined
      : checks.integer('prices.webSearchMaxUsesDefault', pricesIn.webSearchMaxUsesDefault, { min: 0, max: MAX_WEB_SEARCH_USES_DEFAULT, unit: 'searches' });
  const batchBasisPoints =
    pricesIn.batchBasisPoints === undefined
      ? undefined
      : checks.integer('prices.batchBasisPoints', pricesIn.batchBasisPoints, { min: MIN_BATCH_BASIS_POINTS, max: MAX_BATCH_BASIS_POINTS, unit: 'basis points' });
  return {
    ...base,
    ...(fast === undefined ? {} : { fast }),
    ...(inferenceGeo === undefined ? {} : { inferenceGeo }),
    ...(webSearchMaxUsesDefault === undefined ? {} : { webSearchMaxUsesDefault }),
    ...(batchBasisPoints === undefined ? {} : { batchBasisPoints }),
  };
}

/** The card's server-tool allowances, each of its three figures within its bound. */
export function readServerToolAllowances(checks: FieldChecks, value: unknown): ServerToolAllowances {
  const allowancesIn = checks.object('serverToolAllowances', value);
  refuseUnknown(checks, 'serverToolAllowances', allowancesIn, ALLOWANCE_SERVER_TOOLS);
  const allowances: { [K in AllowanceServerTool]?: ServerToolAllowance } = {};
  for (const tool of ALLOWANCE_SERVER_TOOLS) {
    if (allowancesIn[tool] === undefined) continue;
    const path = `serverToolAllowances.${tool}`;
    const allowance = checks.object(path, allowancesIn[tool]);
    refuseUnknown(checks, path, allowance, ['maxUses', 'resultTokensPerUse', 'definitionTokens']);
    const tokens = (field: string): number => checks.integer(`${path}.${field}`, allowance[field], { min: 0, max: MAX_SERVER_TOOL_ALLOWANCE_TOKENS, unit: 'tokens' });
    allowances[tool] = {
      maxUses: checks.integer(`${path}.maxUses`, allowance.maxUses, { min: 1, max: MAX_SERVER_TOOL_ALLOWANCE_USES, unit: 'uses' }),
      resultTokensPerUse: tokens('resultTokensPerUse'),
      definitionTokens: tokens('definitionTokens'),
    };
  }
  return allowances;
}

/** A misspelt optional rate would silently take its fallback: every field must be one the card knows. */
function refuseUnknown(checks: FieldChecks, path: string, value: Record<string, unknown>, known: readonly string[]): void {
  for (const field of Object.keys(value)) if (!known.includes(field)) checks.add(`${path}.${field}`, 'is not a field of a rate card version');
}

function price({ data }: PriceGatewayModel, state: RateCardState): RateCardEvent[] {
  const checks = new FieldChecks();
  const model = checks.text('model', data.model, MAX_GATEWAY_MODEL_CHARS);
  const prices = readGatewayPrices(checks, data.prices);
  const maxOutputTokens = checks.integer('maxOutputTokens', data.maxOutputTokens, { min: 1, max: MAX_GATEWAY_OUTPUT_TOKENS, unit: 'tokens' });
  const attemptTimeoutMs = checks.integer('attemptTimeoutMs', data.attemptTimeoutMs, { min: 1, max: MAX_GATEWAY_ATTEMPT_TIMEOUT_MS, unit: 'ms' });
  const serverToolAllowances = data.serverToolAllowances === undefined ? undefined : readServerToolAllowances(checks, data.serverToolAllowances);
  const enabled = checks.boolean('enabled', data.enabled);
  const pricedAt = checks.instant('pricedAt', data.pricedAt);
  checks.throwIfAny();
  const versions = state.models.get(model) ?? [];
  if (versions.length === 0 && state.models.size >= MAX_RATE_CARD_MODELS) {
    throw ValidationError.of('model', `the rate card holds ${MAX_RATE_CARD_MODELS} models, the most it may`);
  }
  const allowances = serverToolAllowances === undefined ? {} : { serverToolAllowances };
  return [{ type: 'GatewayModelPriced', data: { model, version: versions.length + 1, prices, maxOutputTokens, attemptTimeoutMs, ...allowances, enabled, pricedAt } }];
}

function evolve(state: RateCardState, event: RateCardEvent): RateCardState {
  if (event.type !== 'GatewayModelPriced') return state;
  const models = new Map(state.models);
  models.set(event.data.model, [...(state.models.get(event.data.model) ?? []), event.data]);
  return { models };
}

export const rateCardDecider: Decider<RateCardCommand, RateCardEvent, RateCardState> = {
  decide: (command, state) => {
    if (command.type !== 'PriceGatewayModel') throw ValidationError.of('type', `unknown rate card command ${String((command as { type: unknown }).type)}`);
    return price(command, state);
  },
  evolve,
  initialState: () => ({ models: new Map() }),
};
