import { openPostgresEventStore } from '../../src/event-store/postgres/postgres-event-store';
import { PostgresTestServer } from '../support/postgres-server';
import { describeEventStoreContract } from './event-store.contract';

// Every call is a round trip to a real server on a shared two-core machine.
jest.setTimeout(120_000);

let server: PostgresTestServer | undefined;
let url = '';

beforeAll(async () => {
  server = await PostgresTestServer.start();
  url = await server.createDatabase('contract');
});

afterAll(async () => {
  await server?.stop();
});

describeEventStoreContract('PostgreSQL (a real server started by the test)', () => openPostgresEventStore({ connectionString: url }));
