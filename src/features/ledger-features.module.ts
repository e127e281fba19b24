import { DynamicModule, Module } from '@nestjs/common';
import { FeatureRegistry } from './feature.registry';
import { FeatureRegistryModule } from './feature-registry.module';
import type { OperationFeature } from './operation-feature';

/**
 * What a consuming NestJS module imports to register its operations:
 *
 *     @Module({ imports: [LedgerFeaturesModule.register(generateQueryFeature)] })
 *     export class GenerateQueryModule {}
 *
 * and then runs them with `commandBus.execute(new RunOperationCommand({...}))`.
 */
@Module({})
export class LedgerFeaturesModule {
  static register(...features: OperationFeature[]): DynamicModule {
    // A token of its own per registration, so several feature modules can each register theirs.
    const token = Symbol(`LEDGER_FEATURES ${features.map((feature) => feature.operationId).join(', ')}`);
    return {
      module: LedgerFeaturesModule,
      imports: [FeatureRegistryModule],
      providers: [
        {
          provide: token,
          inject: [FeatureRegistry],
          useFactory: (registry: FeatureRegistry): readonly string[] => {
            for (const feature of features) registry.register(feature);
            return features.map((feature) => feature.operationId);
          },
        },
      ],
      exports: [token],
    };
  }
}
