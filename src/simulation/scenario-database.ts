/**
 * A fresh PostgreSQL database per scenario (`npm run simulate -- --store postgres://…`): the run's
 * log starts empty, so the audit reads every stream (no namespace to skip invocation streams by) and
 * the read-model replay reads only the run's own `$all`.
 */
import { Client } from 'pg';

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

export function isPostgresUrl(store: string): boolean {
  return POSTGRES_URL.test(store);
}

export class ScenarioDatabase {
  private constructor(
    /** The server's URL as given (its database is where CREATE and DROP DATABASE are sent from). */
    private readonly serverUrl: string,
    private readonly name: string,
    /** The scenario's LEDGER_STORE: the given URL with the fresh database in its path. */
    readonly url: string,
  ) {}

  /** Creates `<given database>_<suffix>` (lower-case letters, digits and underscores only). */
  static async create(serverUrl: string, suffix: string): Promise<ScenarioDatabase> {
    const url = new URL(serverUrl);
    const base = decodeURIComponent(url.pathname.slice(1)) || 'postgres';
    const name = `${base}_${suffix}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
    await ScenarioDatabase.run(serverUrl, `CREATE DATABASE "${name}"`);
    url.pathname = `/${name}`;
    return new ScenarioDatabase(serverUrl, name, url.toString());
  }

  /** Drops the scenario's database (its connections closed with the run). */
  async drop(): Promise<void> {
    await ScenarioDatabase.run(this.serverUrl, `DROP DATABASE IF EXISTS "${this.name}" WITH (FORCE)`);
  }

  private static async run(serverUrl: string, statement: string): Promise<void> {
    const client = new Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  }
}

/**
 * The highest position the scenario's log has committed, read past the store's read bound. A reader of
 * `$all` stops below the oldest transaction running anywhere on the server, other databases included,
 * so at a quiet point (no append of the run running) the audit's fold, the live read models and a
 * replay could each stop at a different place while a transaction outside the run stays open. The
 * quiet point has all three reach this position first.
 */
export class CommittedHead {
  private constructor(private readonly client: Client) {}

  static async open(url: string): Promise<CommittedHead> {
    const client = new Client({ connectionString: url });
    await client.connect();
    return new CommittedHead(client);
  }

  async position(): Promise<bigint | undefined> {
    const { rows } = await this.client.query<{ head: string | null }>('SELECT max(position)::text AS head FROM ledger_events');
    return rows[0]?.head == null ? undefined : BigInt(rows[0].head);
  }

  close(): Promise<void> {
    return this.client.end();
  }
}
