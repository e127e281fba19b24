import { Inject, Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { LEDGER_CONFIG, type LedgerConfig, type TokenGrant } from '../../config/ledger.config';

/**
 * The bearer tokens the service honours: those of `LEDGER_TOKENS`, plus any added at start (the demo's).
 * Tokens are kept only as SHA-256 digests, so neither a heap dump nor a stray log of this map shows
 * one, and a lookup compares digests rather than the secret itself.
 */
@Injectable()
export class TokenRegistry {
  private readonly grants = new Map<string, TokenGrant>();

  constructor(@Inject(LEDGER_CONFIG) config: LedgerConfig) {
    for (const [token, grant] of config.tokens) this.grants.set(digest(token), grant);
  }

  /** The grant of a token, or undefined when the token is unknown. */
  grantFor(token: string): TokenGrant | undefined {
    return this.grants.get(digest(token));
  }

  /**
   * Adds a token beside the configured ones. A token already known keeps its grant (configuration
   * always wins: docs/http.md says demo tokens are added beside the configured ones, never instead);
   * returns whether it was added.
   */
  addIfAbsent(token: string, grant: TokenGrant): boolean {
    const key = digest(token);
    if (this.grants.has(key)) return false;
    this.grants.set(key, grant);
    return true;
  }
}

function digest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
