import type { StoreFaultController } from '../../src/simulation/faulty-event-store';

/** A simulated process's store faults when there are none: every append goes through as written. */
export const NO_STORE_FAULTS: StoreFaultController = {
  crashAt: () => undefined,
  onCrash: () => undefined,
  faultFor: () => 'none',
  secondWriterEvent: () => undefined,
  tamper: (_stream, events) => events,
  issued: () => undefined,
  committed: () => undefined,
  observe: () => undefined,
};
