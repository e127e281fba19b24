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
