import { INVOCATION_INSTRUMENTATION, UNOBSERVED } from '../../src/invocations/invocation-instrumentation.port';
import type { ToolLoopInput } from '../../src/runtime';
import { OPEN_TELEMETRY_INSTRUMENTATION } from '../../src/observability/invocation-telemetry';
import { startHttpLedger, type HttpLedger } from '../http/support/http-ledger';

/**
 * The core observes its runs through a port it owns (INVOCATION_INSTRUMENTATION); the observability
 * room implements it. So the core imports nothing of observability, and runs unobserved without it.
 */
describe('invocation runs are observed through the core’s own port, which observability implements', () => {
  let ledger: HttpLedger;

  beforeAll(async () => {
    ledger = await startHttpLedger();
  });

  afterAll(() => ledger.close());

  it('the composed ledger observes runs with OpenTelemetry (ObservabilityModule provides the port)', () => {
    expect(ledger.app.get(INVOCATION_INSTRUMENTATION)).toBe(OPEN_TELEMETRY_INSTRUMENTATION);
  });

  it('without observability a run is unobserved: its input passes through untouched, its body runs as is', () => {
    const run = UNOBSERVED.start({ invocationId: 'i', operationId: 'o', organizationId: 'org' });
    const input = {} as ToolLoopInput;
    expect(run.instrument(input)).toBe(input);
    expect(run.within(() => 42)).toBe(42);
    expect(UNOBSERVED.traceFields()).toEqual({});
  });
});
