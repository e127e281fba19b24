import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { HttpModule } from '../http/http.module';
import { DEMO_OUTPUT, DemoSeedService, type DemoOutput } from './demo-seed.service';

const stdout: DemoOutput = (text) => {
  process.stdout.write(text);
};

/** `LEDGER_DEMO=1`: seeds and prints the demo; does nothing when the demo is off. */
@Module({
  imports: [CqrsModule, HttpModule],
  providers: [DemoSeedService, { provide: DEMO_OUTPUT, useValue: stdout }],
  exports: [DemoSeedService],
})
export class DemoModule {}
