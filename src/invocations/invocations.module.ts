import { Module, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AggregatesModule } from '../aggregates/aggregates.module';
import { CLOCK } from '../domain/clock.token';
import { RECOVERY_SETTINGS, type RecoverySettings } from '../domain/recovery.settings';
import { FeatureRegistryModule } from '../features/feature-registry.module';
import { ProvidersModule } from '../providers/providers.module';
import type { Clock } from '../runtime';
import { CancelInvocationHandler } from './cancel-invocation.handler';
import { CancellationWatcher } from './cancellation-watcher';
import { InvocationEndings } from './invocation-endings';
import { InvocationRecovery } from './invocation-recovery';
import { KeyedRepeats } from './keyed-repeats';
import { RunOperationHandler } from './run-operation.handler';
import { RunningInvocations } from './running-invocations';
import { SweepStaleInvocationsHandler } from './sweep-stale-invocations.handler';

/** The invocations' commands (docs/lifecycle.md): running an operation, cancelling a run, the sweep. */
export const INVOCATIONS_COMMAND_HANDLERS = [RunOperationHandler, CancelInvocationHandler, SweepStaleInvocationsHandler];

/**
 * What this module needs and does not build, each under the token this room owns: ANSWER_STORE,
 * IDEMPOTENCY_SECRET and RECOVERY_SETTINGS (built from the configuration, which the core does not
 * read), SWEEP_CANDIDATES (read from the read models, which the core does not know) and, optionally,
 * INVOCATION_INSTRUMENTATION (how runs are observed). The composition root passes modules exporting them.
 */
export interface InvocationsPorts {
  readonly ports: NonNullable<ModuleMetadata['imports']>;
}

/**
 * The run of an invocation and what keeps it honest (docs/architecture.md): its command handlers,
 * keyed repeats, the runs in flight and their cancellation, and the recovery that sweeps on a schedule.
 */
@Module({})
export class InvocationsModule {
  static register({ ports }: InvocationsPorts): DynamicModule {
    return {
      module: InvocationsModule,
      imports: [CqrsModule, AggregatesModule, FeatureRegistryModule, ProvidersModule, ...ports],
      providers: [
        ...INVOCATIONS_COMMAND_HANDLERS,
        KeyedRepeats,
        RunningInvocations,
        InvocationEndings,
        CancellationWatcher,
        {
          // The manual sweep's own handler and command, called directly: the command bus registers its
          // handlers during bootstrap, and the first pass may come due before it has.
          provide: InvocationRecovery,
          inject: [SweepStaleInvocationsHandler, CLOCK, RECOVERY_SETTINGS],
          useFactory: (sweep: SweepStaleInvocationsHandler, clock: Clock, settings: RecoverySettings) =>
            new InvocationRecovery((command) => sweep.execute(command), clock, settings),
        },
      ],
    };
  }
}
