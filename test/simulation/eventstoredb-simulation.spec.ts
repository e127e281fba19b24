import { runSimulation } from '../../src/simulation/simulator';
import { EventStoreDbWireServer } from '../support/eventstoredb-wire-server';

const connectionString = process.env['EVENTSTORE_CONNECTION_STRING'];

// Every store call is a gRPC round trip to a local server: slower than the embedded store.
// Gateway calls run beside the operations (issue 23), about doubling the appends through the real client.
jest.setTimeout(600_000);

describe('issue 8: the simulator against EventStoreDB/KurrentDB', () => {
  it('runs a scenario through the real client against the wire test server, with the same invariants (a fresh log, so ids need no namespace)', async () => {
    // The wire test server (test/support) speaks the client's gRPC protocol as KurrentDB does; it is not a KurrentDB.
    const server = await EventStoreDbWireServer.start({ batchAppend: true });
    try {
      const result = await runSimulation({ seed: 1, invocations: 30, store: server.connectionString, namespace: '' });
      if (result.report !== undefined) throw new Error(result.report);
      expect(result.violation).toBeUndefined();
    } finally {
      await server.stop();
    }
  });

  if (connectionString) {
    it('runs a scenario on the server named by EVENTSTORE_CONNECTION_STRING (ids namespaced, so earlier runs do not interfere)', async () => {
      const result = await runSimulation({ seed: 1, invocations: 30, store: connectionString, namespace: `sim-${Date.now().toString(36)}-` });
      if (result.report !== undefined) throw new Error(result.report);
      expect(result.violation).toBeUndefined();
    });
  }
});
