import type { FactoryProvider } from '@nestjs/common';
import type { RandomSource } from '../runtime';

/**
 * The source of chance for retry waits (runToolLoop's jitter), in [0, 1): Math.random in the service;
 * the simulator provides a seeded stream so a seed replays the same waits.
 */
export const RETRY_JITTER = Symbol('RETRY_JITTER');

// A factory, not a value: Nest's testing module cannot override a value provider with a factory.
export const retryJitterProvider: FactoryProvider<RandomSource> = {
  provide: RETRY_JITTER,
  useFactory: (): RandomSource => () => Math.random(),
};
