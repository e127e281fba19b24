import { Module } from '@nestjs/common';
import { LedgerFeaturesModule } from '../ledger-features.module';
import { demoArithmeticFeature } from './demo-arithmetic.feature';

/** Registers `demo.arithmetic`, exactly as a consuming feature module registers its operations. */
@Module({ imports: [LedgerFeaturesModule.register(demoArithmeticFeature)] })
export class DemoArithmeticModule {}
