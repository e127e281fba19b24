import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AggregatesModule } from '../aggregates/aggregates.module';
import { HttpKitModule } from '../http-kit/http-kit.module';
import { DEMO_OUTPUT, DemoSeedService, type DemoOutput } from './demo-seed.service';

const stdout: DemoOutput = (text) => {
  process.stdout.write(text);
};

/** `LEDGER_DEMO=1`: seeds and prints the demo; does nothing when the demo is off. */
@Module({
  imports: [CqrsModule, AggregatesModule, HttpKitModule],
  providers: [DemoSeedService, { provide: DEMO_OUTPUT, useValue: stdout }],
  exports: [DemoSeedService],
})
export class DemoModule {}
