import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WEBHOOK_HISTORY_RETENTION_MS, WEBHOOK_PRUNE_INTERVAL_MS } from '../../src/webhooks/webhook.bounds';
import { WebhookStore, type NewDelivery } from '../../src/webhooks/webhook.store';

const START_MS = Date.parse('2026-03-01T09:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();

describe('README.md webhook history is kept for WEBHOOK_HISTORY_RETENTION_MS, then deleted', () => {
  let directory: string;
  let store: WebhookStore;
  let position = 0n;

  const register = (webhookId: string): void =>
    store.register({ webhookId, organizationId: 'acme', url: 'https://hooks.example/x', events: ['InvocationSettled'], createdAt: iso(START_MS), secret: 's', fromPosition: undefined });
  const delivery = (webhookId: string, id: string): NewDelivery => ({
    deliveryId: id,
    webhookId,
    eventPosition: ++position,
    type: 'InvocationSettled',
    occurredAt: iso(START_MS),
    body: '{}',
  });
  const deliveryIds = (webhookId: string): string[] => store.deliveries(webhookId, 100).map((view) => view.deliveryId).sort();

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-webhook-retention-'));
    store = WebhookStore.open(join(directory, 'webhooks.sqlite'));
    position = 0n;
  });

  afterEach(() => {
    store.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('deletes finished deliveries and their attempts past the retention period, never a pending one', () => {
    register('wh-1');
    store.enqueue([delivery('wh-1', 'done'), delivery('wh-1', 'dead'), delivery('wh-1', 'waiting')], position, START_MS);
    store.recordAttempt('done', { attempt: 1, at: iso(START_MS), statusCode: 204, durationMs: 5 }, { status: 'delivered' });
    store.recordAttempt('dead', { attempt: 8, at: iso(START_MS), statusCode: 500, durationMs: 5 }, { status: 'dead_lettered' });
    store.recordAttempt('waiting', { attempt: 1, at: iso(START_MS), statusCode: 500, durationMs: 5 }, { status: 'pending', nextAttemptAtMs: START_MS + 1_000 });

    // Just inside the period: everything stays.
    expect(store.prune(START_MS + WEBHOOK_HISTORY_RETENTION_MS - 1)).toEqual({ deliveries: 0, webhooks: 0 });
    expect(deliveryIds('wh-1')).toEqual(['dead', 'done', 'waiting']);

    // Past it (and past the interval between passes): the finished ones go, with their attempts.
    expect(store.prune(START_MS + WEBHOOK_HISTORY_RETENTION_MS + WEBHOOK_PRUNE_INTERVAL_MS)).toEqual({ deliveries: 2, webhooks: 0 });
    expect(deliveryIds('wh-1')).toEqual(['waiting']);
    const db = new Database(join(directory, 'webhooks.sqlite'), { readonly: true });
    try {
      expect(db.prepare('SELECT DISTINCT delivery_id FROM webhook_attempts').pluck().all()).toEqual(['waiting']);
    } finally {
      db.close();
    }
  });

  it(`runs at most one pass per WEBHOOK_PRUNE_INTERVAL_MS (${WEBHOOK_PRUNE_INTERVAL_MS} ms), from enqueue on its own`, () => {
    register('wh-1');
    store.enqueue([delivery('wh-1', 'done')], position, START_MS);
    store.recordAttempt('done', { attempt: 1, at: iso(START_MS), statusCode: 204, durationMs: 5 }, { status: 'delivered' });
    const expiredAt = START_MS + WEBHOOK_HISTORY_RETENTION_MS;
    // The enqueue at START_MS ran the pass; one less than an interval later, nothing runs.
    expect(store.prune(START_MS + WEBHOOK_PRUNE_INTERVAL_MS - 1)).toEqual({ deliveries: 0, webhooks: 0 });
    // The next event's enqueue, once expired, deletes it.
    store.enqueue([], ++position, expiredAt + WEBHOOK_PRUNE_INTERVAL_MS);
    expect(deliveryIds('wh-1')).toEqual([]);
  });

  it('deletes a removed webhook once its cancelled deliveries have gone, and keeps a live one', () => {
    register('wh-gone');
    register('wh-live');
    store.enqueue([delivery('wh-gone', 'never-sent')], position, START_MS);
    expect(store.delete('acme', 'wh-gone', iso(START_MS))).toBe(true);
    expect(store.prune(START_MS + WEBHOOK_HISTORY_RETENTION_MS + WEBHOOK_PRUNE_INTERVAL_MS)).toEqual({ deliveries: 1, webhooks: 1 });
    const db = new Database(join(directory, 'webhooks.sqlite'), { readonly: true });
    try {
      expect(db.prepare('SELECT webhook_id FROM webhook_endpoints').pluck().all()).toEqual(['wh-live']);
    } finally {
      db.close();
    }
  });

  it('keeps the history of a file written before pruning existed for one retention period from its first pass', () => {
    register('wh-1');
    store.enqueue([delivery('wh-1', 'old')], position, START_MS);
    store.recordAttempt('old', { attempt: 1, at: iso(START_MS), statusCode: 204, durationMs: 5 }, { status: 'delivered' });
    store.close();
    // As an older build left it: no finished time.
    const db = new Database(join(directory, 'webhooks.sqlite'));
    db.exec('UPDATE webhook_deliveries SET finished_at_ms = NULL');
    db.close();
    store = WebhookStore.open(join(directory, 'webhooks.sqlite'));
    const firstPassMs = START_MS + 2 * WEBHOOK_HISTORY_RETENTION_MS;
    expect(store.prune(firstPassMs)).toEqual({ deliveries: 0, webhooks: 0 });
    expect(store.prune(firstPassMs + WEBHOOK_HISTORY_RETENTION_MS)).toEqual({ deliveries: 1, webhooks: 0 });
  });
});
