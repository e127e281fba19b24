import { Module } from '@nestjs/common';
import { FeatureRegistry } from './feature.registry';

/** The one FeatureRegistry: what LedgerFeaturesModule.register fills and the run of an invocation reads. */
@Module({
  providers: [FeatureRegistry],
  exports: [FeatureRegistry],
})
export class FeatureRegistryModule {}
