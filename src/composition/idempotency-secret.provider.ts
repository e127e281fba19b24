import { Logger, type FactoryProvider } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { embeddedLogPath, IN_MEMORY_LOG_PATH } from '../event-store/open-event-store';
import { IDEMPOTENCY_SECRET } from '../invocations/request-fingerprint';

/** Bytes of a generated fingerprint secret. */
const GENERATED_SECRET_BYTES = 32;

/** The secret file kept beside a store file: `var/ledger.sqlite` → `var/ledger.sqlite.idempotency-secret`. */
export function idempotencySecretPathFor(storePath: string): string {
  return `${storePath}.idempotency-secret`;
}

/**
 * The key of request fingerprints: LEDGER_IDEMPOTENCY_SECRET when the deployment sets it; otherwise
 * generated on first start and kept in a file beside the embedded store (readable by its owner
 * only), so a restart, or a second process on the same store, recognises the same requests. An
 * in-memory store gets one for its lifetime. With EventStoreDB the file sits beside this instance's
 * read store, and instances do not share it: a warning says to set the variable.
 */
export const idempotencySecretProvider: FactoryProvider<Buffer> = {
  provide: IDEMPOTENCY_SECRET,
  inject: [LEDGER_CONFIG],
  useFactory: (config: LedgerConfig): Buffer => {
    if (config.idempotencySecret !== undefined) return Buffer.from(config.idempotencySecret, 'utf8');
    const embeddedLog = embeddedLogPath(config.store);
    const beside = embeddedLog ?? config.readStorePath;
    if (beside === IN_MEMORY_LOG_PATH) return randomBytes(GENERATED_SECRET_BYTES);
    if (embeddedLog === undefined) {
      new Logger('Idempotency').warn('LEDGER_IDEMPOTENCY_SECRET is not set: every instance on this EventStoreDB log must share one');
    }
    return keptSecret(idempotencySecretPathFor(beside));
  },
};

/**
 * Reads the secret file, creating it first if there is none. Written whole to a private temporary
 * file and linked into place (link fails if the name exists), so two processes starting together
 * agree on one secret and neither ever reads a half-written one.
 */
export function keptSecret(path: string): Buffer {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(temporary, randomBytes(GENERATED_SECRET_BYTES).toString('hex'), { flag: 'wx', mode: 0o600 });
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(temporary);
  }
  return Buffer.from(readFileSync(path, 'utf8').trim(), 'utf8');
}
