/**
 * The webhooks' own SQLite file (beside the read models): endpoints with their secrets, deliveries
 * with their attempts, and the checkpoint of the delivery worker in the log. Deliveries are created
 * in the same transaction that moves the checkpoint past their event, so a crash never loses one; a
 * delivery is marked delivered only after its receiver answered 2xx, so a crash in between re-sends
 * it (at least once, with the same delivery id).
 *
 * It holds the webhook secrets: the file is created readable by its owner only.
 */
import Database from 'better-sqlite3';
import { chmodSync } from 'node:fs';
import { MAX_PRUNED_DELIVERIES_PER_PASS, WEBHOOK_HISTORY_RETENTION_MS, WEBHOOK_PRUNE_INTERVAL_MS, type DeliverableEventType } from './webhook.bounds';

export interface WebhookEndpoint {
  readonly webhookId: string;
  readonly organizationId: string;
  readonly url: string;
  readonly events: readonly DeliverableEventType[];
  readonly createdAt: string;
}

interface EndpointRow {
  readonly webhook_id: string;
  readonly organization_id: string;
  readonly url: string;
  readonly events: string;
  readonly secret: string;
  readonly created_at: string;
  readonly from_position: string;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'dead_lettered' | 'cancelled';

export interface DeliveryAttempt {
  readonly attempt: number;
  readonly at: string;
  readonly statusCode?: number;
  readonly error?: string;
  readonly durationMs: number;
}

export interface DeliveryView {
  readonly deliveryId: string;
  readonly type: string;
  readonly occurredAt: string;
  readonly status: DeliveryStatus;
  readonly attempts: readonly DeliveryAttempt[];
  readonly nextAttemptAt?: string;
}

/** A delivery to send: its endpoint's URL and secret, and the exact body to sign and POST. */
export interface DueDelivery {
  readonly deliveryId: string;
  readonly webhookId: string;
  readonly url: string;
  readonly secret: string;
  readonly body: string;
  readonly attempts: number;
}

export interface NewDelivery {
  readonly deliveryId: string;
  readonly webhookId: string;
  readonly eventPosition: bigint;
  readonly type: string;
  readonly occurredAt: string;
  readonly body: string;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS webhook_endpoints (
    webhook_id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL,
    from_position TEXT NOT NULL,
    deleted_at TEXT
  );
  CREATE INDEX IF NOT EXISTS webhook_endpoints_by_organization ON webhook_endpoints (organization_id) WHERE deleted_at IS NULL;
  CREATE TABLE IF NOT EXISTS webhook_deliveries (
    delivery_id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL,
    event_position TEXT NOT NULL,
    type TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at_ms INTEGER,
    seq INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at_ms) WHERE status = 'pending';
  CREATE INDEX IF NOT EXISTS webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, seq);
  CREATE TABLE IF NOT EXISTS webhook_attempts (
    delivery_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    at TEXT NOT NULL,
    status_code INTEGER,
    error TEXT,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
  );
  CREATE TABLE IF NOT EXISTS webhook_checkpoint (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    position TEXT
  );
`;

/** `ledger.read.sqlite` → `ledger.webhooks.sqlite`; `:memory:` stays in memory. */
export function webhookStorePathFor(readStorePath: string): string {
  if (readStorePath === ':memory:') return ':memory:';
  return readStorePath.endsWith('.read.sqlite')
    ? `${readStorePath.slice(0, -'.read.sqlite'.length)}.webhooks.sqlite`
    : readStorePath.replace(/(\.sqlite)?$/, '.webhooks.sqlite');
}

export class WebhookStore {
  private readonly db: Database.Database;
  private subscribed: Set<string> | undefined;
  private seq: number;
  private lastPruneAtMs = Number.NEGATIVE_INFINITY;

  private constructor(path: string) {
    this.db = new Database(path);
    if (path !== ':memory:') chmodSync(path, 0o600);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(SCHEMA);
    this.addFinishedAtColumn();
    this.seq = (this.db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM webhook_deliveries').get() as { seq: number }).seq;
  }

  static open(path: string): WebhookStore {
    return new WebhookStore(path);
  }

  /**
   * Files written before history was pruned have no `finished_at_ms`: the column is added empty, and
   * the first prune stamps the deliveries already finished with its own time, so they are kept one
   * retention period from then.
   */
  private addFinishedAtColumn(): void {
    const columns = this.db.prepare("SELECT name FROM pragma_table_info('webhook_deliveries')").pluck().all() as string[];
    if (!columns.includes('finished_at_ms')) this.db.exec('ALTER TABLE webhook_deliveries ADD COLUMN finished_at_ms INTEGER');
  }

  /**
   * Deletes the history past WEBHOOK_HISTORY_RETENTION_MS (at most once per WEBHOOK_PRUNE_INTERVAL_MS,
   * at most MAX_PRUNED_DELIVERIES_PER_PASS deliveries a pass): finished deliveries with their attempts,
   * and removed webhooks none of whose deliveries are left. Pending deliveries are never deleted.
   */
  prune(nowMs: number): { readonly deliveries: number; readonly webhooks: number } {
    if (nowMs - this.lastPruneAtMs < WEBHOOK_PRUNE_INTERVAL_MS) return { deliveries: 0, webhooks: 0 };
    this.lastPruneAtMs = nowMs;
    const cutoffMs = nowMs - WEBHOOK_HISTORY_RETENTION_MS;
    return this.db.transaction(() => {
      this.db.prepare("UPDATE webhook_deliveries SET finished_at_ms = ? WHERE status != 'pending' AND finished_at_ms IS NULL").run(nowMs);
      const expired = this.db
        .prepare("SELECT delivery_id FROM webhook_deliveries WHERE status != 'pending' AND finished_at_ms <= ? LIMIT ?")
        .pluck()
        .all(cutoffMs, MAX_PRUNED_DELIVERIES_PER_PASS) as string[];
      const deleteAttempts = this.db.prepare('DELETE FROM webhook_attempts WHERE delivery_id = ?');
      const deleteDelivery = this.db.prepare('DELETE FROM webhook_deliveries WHERE delivery_id = ?');
      for (const deliveryId of expired) {
        deleteAttempts.run(deliveryId);
        deleteDelivery.run(deliveryId);
      }
      const { changes: webhooks } = this.db
        .prepare(
          `DELETE FROM webhook_endpoints WHERE deleted_at IS NOT NULL AND deleted_at <= ?
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = webhook_endpoints.webhook_id)`,
        )
        .run(new Date(cutoffMs).toISOString());
      return { deliveries: expired.length, webhooks };
    })();
  }

  register(endpoint: WebhookEndpoint & { readonly secret: string; readonly fromPosition: bigint | undefined }): void {
    this.db
      .prepare(
        'INSERT INTO webhook_endpoints (webhook_id, organization_id, url, events, secret, created_at, from_position) VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        endpoint.webhookId,
        endpoint.organizationId,
        endpoint.url,
        JSON.stringify(endpoint.events),
        endpoint.secret,
        endpoint.createdAt,
        (endpoint.fromPosition ?? 0n).toString(),
      );
    this.subscribed = undefined;
  }

  countActive(organizationId: string): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM webhook_endpoints WHERE organization_id = ? AND deleted_at IS NULL').get(organizationId) as { n: number }).n;
  }

  list(organizationId: string): WebhookEndpoint[] {
    const rows = this.db
      .prepare('SELECT * FROM webhook_endpoints WHERE organization_id = ? AND deleted_at IS NULL ORDER BY created_at, webhook_id')
      .all(organizationId) as EndpointRow[];
    return rows.map(toEndpoint);
  }

  get(organizationId: string, webhookId: string): WebhookEndpoint | undefined {
    const row = this.db
      .prepare('SELECT * FROM webhook_endpoints WHERE webhook_id = ? AND organization_id = ? AND deleted_at IS NULL')
      .get(webhookId, organizationId) as EndpointRow | undefined;
    return row === undefined ? undefined : toEndpoint(row);
  }

  /** Removes a webhook; its deliveries not yet made are cancelled. False when there was none. */
  delete(organizationId: string, webhookId: string, at: string): boolean {
    const removed = this.db.transaction(() => {
      const { changes } = this.db
        .prepare('UPDATE webhook_endpoints SET deleted_at = ? WHERE webhook_id = ? AND organization_id = ? AND deleted_at IS NULL')
        .run(at, webhookId, organizationId);
      if (changes > 0) {
        this.db
          .prepare("UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at_ms = NULL, finished_at_ms = ? WHERE webhook_id = ? AND status = 'pending'")
          .run(Date.parse(at), webhookId);
      }
      return changes > 0;
    })();
    this.subscribed = undefined;
    return removed;
  }

  /** Event types some live webhook subscribes to (the worker skips every other event unread). */
  subscribedTypes(): ReadonlySet<string> {
    if (this.subscribed === undefined) {
      const rows = this.db.prepare('SELECT events FROM webhook_endpoints WHERE deleted_at IS NULL').all() as { events: string }[];
      this.subscribed = new Set(rows.flatMap((row) => JSON.parse(row.events) as string[]));
    }
    return this.subscribed;
  }

  /** Live webhooks of the organization subscribed to `type` and registered before `position`. */
  endpointsFor(organizationId: string, type: string, position: bigint): { readonly webhookId: string }[] {
    const rows = this.db
      .prepare('SELECT webhook_id, events, from_position FROM webhook_endpoints WHERE organization_id = ? AND deleted_at IS NULL')
      .all(organizationId) as Pick<EndpointRow, 'webhook_id' | 'events' | 'from_position'>[];
    return rows
      .filter((row) => BigInt(row.from_position) < position && (JSON.parse(row.events) as string[]).includes(type))
      .map((row) => ({ webhookId: row.webhook_id }));
  }

  /**
   * Where the worker resumes: `undefined` before its first start; `{ after: undefined }` to read the
   * log from its beginning (it was empty when the worker first started).
   */
  checkpoint(): { readonly after: bigint | undefined } | undefined {
    const row = this.db.prepare('SELECT position FROM webhook_checkpoint WHERE id = 1').get() as { position: string | null } | undefined;
    if (row === undefined) return undefined;
    return { after: row.position === null ? undefined : BigInt(row.position) };
  }

  /** Creates the deliveries of one event and moves the checkpoint past it, together. */
  enqueue(deliveries: readonly NewDelivery[], position: bigint, nowMs: number): void {
    this.db.transaction(() => {
      const insert = this.db.prepare(
        "INSERT OR IGNORE INTO webhook_deliveries (delivery_id, webhook_id, event_position, type, occurred_at, body, status, attempts, next_attempt_at_ms, seq) VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)",
      );
      for (const delivery of deliveries) {
        insert.run(delivery.deliveryId, delivery.webhookId, delivery.eventPosition.toString(), delivery.type, delivery.occurredAt, delivery.body, nowMs, ++this.seq);
      }
      this.db.prepare('INSERT INTO webhook_checkpoint (id, position) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET position = excluded.position').run(position.toString());
    })();
    this.prune(nowMs);
  }

  /** Sets the checkpoint without deliveries (the first start: the log's head). */
  setCheckpoint(position: bigint | undefined): void {
    this.db
      .prepare('INSERT INTO webhook_checkpoint (id, position) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET position = excluded.position')
      .run(position === undefined ? null : position.toString());
  }

  /** Pending deliveries due at `nowMs`, oldest first, of webhooks that still exist. */
  due(nowMs: number, limit: number, excluding: ReadonlySet<string>): DueDelivery[] {
    const rows = this.db
      .prepare(
        `SELECT d.delivery_id, d.webhook_id, d.body, d.attempts, e.url, e.secret FROM webhook_deliveries d
         JOIN webhook_endpoints e ON e.webhook_id = d.webhook_id AND e.deleted_at IS NULL
         WHERE d.status = 'pending' AND d.next_attempt_at_ms <= ? ORDER BY d.next_attempt_at_ms, d.seq LIMIT ?`,
      )
      .all(nowMs, limit + excluding.size) as { delivery_id: string; webhook_id: string; body: string; attempts: number; url: string; secret: string }[];
    return rows
      .filter((row) => !excluding.has(row.delivery_id))
      .slice(0, limit)
      .map((row) => ({ deliveryId: row.delivery_id, webhookId: row.webhook_id, url: row.url, secret: row.secret, body: row.body, attempts: row.attempts }));
  }

  /** When the next pending delivery falls due, in clock ms (undefined: none pending). */
  nextDueAtMs(): number | undefined {
    const row = this.db.prepare("SELECT MIN(next_attempt_at_ms) AS at FROM webhook_deliveries WHERE status = 'pending'").get() as { at: number | null };
    return row.at ?? undefined;
  }

  /** Records an attempt and what follows it: delivered, dead-lettered, or another attempt at `nextAttemptAtMs`. */
  recordAttempt(
    deliveryId: string,
    attempt: DeliveryAttempt,
    outcome: { readonly status: 'delivered' | 'dead_lettered' } | { readonly status: 'pending'; readonly nextAttemptAtMs: number },
  ): void {
    this.db.transaction(() => {
      this.db
        .prepare('INSERT OR REPLACE INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?)')
        .run(deliveryId, attempt.attempt, attempt.at, attempt.statusCode ?? null, attempt.error ?? null, Math.round(attempt.durationMs));
      this.db
        .prepare("UPDATE webhook_deliveries SET attempts = ?, status = ?, next_attempt_at_ms = ?, finished_at_ms = ? WHERE delivery_id = ? AND status = 'pending'")
        .run(
          attempt.attempt,
          outcome.status,
          outcome.status === 'pending' ? outcome.nextAttemptAtMs : null,
          outcome.status === 'pending' ? null : Date.parse(attempt.at),
          deliveryId,
        );
    })();
  }

  /** A webhook's most recent deliveries with their attempts, newest first. */
  deliveries(webhookId: string, limit: number): DeliveryView[] {
    const rows = this.db
      .prepare('SELECT delivery_id, type, occurred_at, status, next_attempt_at_ms FROM webhook_deliveries WHERE webhook_id = ? ORDER BY seq DESC LIMIT ?')
      .all(webhookId, limit) as { delivery_id: string; type: string; occurred_at: string; status: DeliveryStatus; next_attempt_at_ms: number | null }[];
    const attemptsOf = this.db.prepare('SELECT attempt, at, status_code, error, duration_ms FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt');
    return rows.map((row) => ({
      deliveryId: row.delivery_id,
      type: row.type,
      occurredAt: row.occurred_at,
      status: row.status,
      attempts: (attemptsOf.all(row.delivery_id) as { attempt: number; at: string; status_code: number | null; error: string | null; duration_ms: number }[]).map(
        (attempt) => ({
          attempt: attempt.attempt,
          at: attempt.at,
          ...(attempt.status_code === null ? {} : { statusCode: attempt.status_code }),
          ...(attempt.error === null ? {} : { error: attempt.error }),
          durationMs: attempt.duration_ms,
        }),
      ),
      ...(row.status === 'pending' && row.next_attempt_at_ms !== null ? { nextAttemptAt: new Date(row.next_attempt_at_ms).toISOString() } : {}),
    }));
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    webhookId: row.webhook_id,
    organizationId: row.organization_id,
    url: row.url,
    events: JSON.parse(row.events) as DeliverableEventType[],
    createdAt: row.created_at,
  };
}
