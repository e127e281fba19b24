/**
 * The runtime's public API: the bounded conversation, its ports (provider, clock), the retry policy,
 * pricing and the scripted provider. Plain TypeScript, no framework, store or SDK.
 */
export * from './provider.port';
export * from './faults';
export * from './conversation.types';
export * from './tool.types';
export { SystemClock, VirtualClock, systemClock, MAX_TIMER_DELAY_MS, isTimeoutReason, timeoutReason } from './clock';
export type { Clock, VirtualClockOptions } from './clock';
export * from './pricing';
export * from './retry-policy';
export * from './execute-with-retry';
export * from './tool-error-text';
export { MAX_COMPILED_SCHEMAS } from './compiled-schema.cache';
export {
  RECOVERABLE_FAULT_KINDS,
  buildToolCatalog,
  compileInputSchema,
  malformedArgumentsText,
  preflightToolCalls,
} from './tool-preflight';
export type {
  BatchViolation,
  CallStatus,
  CatalogEntry,
  InputValidator,
  PreflightResult,
  RecoverableFaultKind,
  ToolCatalog,
} from './tool-preflight';
export * from './scripted-provider';
export * from './run-tool-loop';
export * from './usage';
