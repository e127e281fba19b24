import { DynamicModule, Module } from '@nestjs/common';
import { FeatureRegistry } from './feature.registry';
import type { OperationFeature } from './operation-feature';

let registrations = 0;

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
    const token = `LEDGER_FEATURES_${++registrations}`;
    return {
      module: LedgerFeaturesModule,
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
