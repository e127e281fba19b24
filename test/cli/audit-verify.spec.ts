import { randomUUID } from 'node:crypto';
import { BALANCE_COLLECTION, BALANCES_PROJECTION, type BalanceView } from '../../projections';
import type { HoldSettled } from '../../src/accounts/account.events';
import { auditVerify } from '../../src/cli/audit-verify.command';
import { EXIT_DIFFERENCES, EXIT_OK } from '../../src/cli/cli-io';
import { ledgerWithHistory, type AuditedLedger } from './ledger-fixture';
import { MemoryIo } from './support/memory-io';

describe('llm-ledger audit verify (README.md "The auditors\' CLI"): replays the log and checks every read model and balance', () => {
  let audited: AuditedLedger;

  beforeEach(async () => {
    audited = await ledgerWithHistory();
  });

  afterEach(() => audited.ledger.close());

  const verify = async (json = false): Promise<{ exitCode: number; io: MemoryIo }> => {
    const io = new MemoryIo();
    const { exitCode } = await auditVerify({ eventStore: audited.ledger.store, readStore: audited.readStore, io, json });
    return { exitCode, io };
  };

  it('exits 0 on an untouched store after a few invocations, a refusal among them', async () => {
    expect(audited.runs.map((run) => run.state)).toEqual(['settled', 'settled', 'refused']);
    const { exitCode, io } = await verify();
    expect(io.stdoutText).toMatch(/^audit verify: OK — 8 projections rebuilt and compared; 2 organizations, 3 invocations, \d+ events audited\.\n$/);
    expect(exitCode).toBe(EXIT_OK);

    const json = await verify(true);
    expect(json.exitCode).toBe(EXIT_OK);
    expect(json.io.json()).toEqual([expect.objectContaining({ kind: 'summary', differences: 0, organizations: 2, invocations: 3 })]);
  });

  it('exits 1 after one balance row of the read model is corrupted, and says which row and field', async () => {
    const balance = audited.readStore.get<BalanceView>(BALANCES_PROJECTION, BALANCE_COLLECTION, 'acme')!;
    expect(balance.available).toBe(1_000 - 10);
    audited.readStore.write((session) => {
      session.documents(BALANCES_PROJECTION).put(BALANCE_COLLECTION, 'acme', { ...balance, available: balance.available + 1 });
    });

    const { exitCode, io } = await verify(true);
    expect(exitCode).toBe(EXIT_DIFFERENCES);
    const lines = io.json();
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'projection_document', projection: 'balances', collection: 'balance', id: 'acme' }),
        { kind: 'balance_identity', organizationId: 'acme', rule: 'available = granted + adjustments - charged - held', stored: 991, derived: 990 },
        { kind: 'balance_mismatch', organizationId: 'acme', field: 'available', readModel: 991, accountStream: 990 },
      ]),
    );
    expect(lines.at(-1)).toMatchObject({ kind: 'summary', differences: 3 });

    const text = await verify();
    expect(text.exitCode).toBe(EXIT_DIFFERENCES);
    expect(text.io.lines).toContain('read model balances balance/acme: available: live 991 != rebuilt 990');
    expect(text.io.lines.at(-1)).toMatch(/^audit verify: 3 differences — /);
  });

  it('exits 1 after an account event charges a hold the invocations never settled, though every read model rebuilds equal', async () => {
    // A second settlement of an already settled invocation: the account charges it twice.
    const doubleCharge: HoldSettled = {
      type: 'HoldSettled',
      data: { invocationId: audited.runs[0]!.invocationId, heldCredits: 100, chargedCredits: 5, settledAt: new Date().toISOString() },
    };
    await audited.ledger.store.append('account-acme', [{ id: randomUUID(), ...doubleCharge, metadata: { schemaVersion: 1 } }], {
      expectedRevision: 'any',
    });
    await audited.ledger.runner.caughtUp();

    const { exitCode, io } = await verify(true);
    expect(exitCode).toBe(EXIT_DIFFERENCES);
    expect(io.json().filter((line) => line.kind !== 'summary')).toEqual([
      { kind: 'hold_settled_before_invocation', organizationId: 'acme', invocationId: audited.runs[0]!.invocationId, holdCharged: 5 },
      { kind: 'charges_total', organizationId: 'acme', accountCharged: 15, invocationCharges: 10 },
    ]);
  });
});
