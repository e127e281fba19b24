/**
 * What a failed PostgreSQL call means for the store: the server or the connection is away for now
 * (worth retrying, and for an append an unknown outcome), or something else.
 */

/** SQLSTATE classes and codes of a server that is going away, starting, or out of connections. */
const TRANSIENT_SQLSTATE = /^(08|57P0[1-4]|53300|53400|40001|40P01)/;
/** Node's codes for a connection that could not be made or was lost. */
const TRANSIENT_CLIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/** node-postgres reports a lost connection or a pool wait that timed out by message alone. */
const TRANSIENT_CLIENT_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout|the database system is (starting up|shutting down|in recovery mode)/i;

/**
 * SQLSTATE of a transaction the server ended to break a deadlock: it rolled back, so it may be sent
 * again. Appends across streams that take the same streams in opposite orders can meet this way.
 */
export const DEADLOCK_DETECTED_SQLSTATE = '40P01';

/** The code of a driver or server error (SQLSTATE for the server's). */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True for a lost or refused connection, or a server shutting down or starting up. */
export function isTransientPostgresError(error: unknown): boolean {
  const code = errorCode(error);
  if (code !== undefined && (TRANSIENT_CLIENT_CODES.has(code) || TRANSIENT_SQLSTATE.test(code))) return true;
  return error instanceof Error && TRANSIENT_CLIENT_MESSAGE.test(error.message);
}

/** The unique constraint a unique_violation (23505) names, if that is what the error is. */
export function violatedUniqueConstraint(error: unknown): string | undefined {
  if (errorCode(error) !== '23505') return undefined;
  const name = (error as { constraint?: unknown }).constraint;
  return typeof name === 'string' ? name : undefined;
}
