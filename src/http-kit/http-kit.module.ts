import { Module } from '@nestjs/common';
import { TokenRegistry } from './auth/token-registry';

/**
 * The kit's one provider: the TokenRegistry the bearer-token guard checks against. One instance for
 * every controller and for the demo's seeding, which adds its tokens to it.
 */
@Module({
  providers: [TokenRegistry],
  exports: [TokenRegistry],
})
export class HttpKitModule {}
