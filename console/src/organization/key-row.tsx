import { GATEWAY_REJECTION_REASONS, type GatewayKey } from '../api/types';
import { Credits } from '../components/common';
import { formatCount, formatTime, words } from '../format';
import { limitWords } from './limit-fields';

/** Whether an ISO instant has passed, on this browser's clock (the service decides; this only labels). */
const hasPassed = (iso: string): boolean => Date.parse(iso) <= Date.now();

/** Live, expired or revoked, with when; a key's expiry ahead; until when its secret before a rotation still works. */
function KeyStatus({ gatewayKey: key }: { gatewayKey: GatewayKey }) {
  const expired = key.revokedAt === undefined && key.expiresAt !== undefined && hasPassed(key.expiresAt);
  return (
    <td class="status">
      {key.revokedAt !== undefined ? (
        <span class="badge state-refused">revoked</span>
      ) : expired ? (
        <span class="badge state-refused">expired</span>
      ) : (
        <span class="badge state-settled">live</span>
      )}
      {key.revokedAt !== undefined && <small class="key-id">{formatTime(key.revokedAt)}</small>}
      {key.revokedAt === undefined && key.expiresAt !== undefined && (
        <small class="key-id">
          {expired ? '' : 'expires '}
          {formatTime(key.expiresAt)}
        </small>
      )}
      {key.revokedAt === undefined && key.previousSecretValidUntil !== undefined && <small class="key-id">rotated; the old secret works until {formatTime(key.previousSecretValidUntil)}</small>}
    </td>
  );
}

/** Its spend limit and alerts, `max_tokens` cap and rate limits, with what counts against them now. */
function KeyLimits({ gatewayKey: key }: { gatewayKey: GatewayKey }) {
  const minute = key.currentMinute;
  return (
    <td class="limits">
      {limitWords(key)}
      {key.maxOutputTokens !== undefined && <small class="key-id">max_tokens ≤ {formatCount(key.maxOutputTokens)}</small>}
      {key.maxConcurrent !== undefined && (
        <small class="key-id">
          ≤ {formatCount(key.maxConcurrent)} in flight ({formatCount(key.inFlight)} now)
        </small>
      )}
      {key.requestsPerMinute !== undefined && <small class="key-id">≤ {formatCount(key.requestsPerMinute)} calls a minute</small>}
      {key.tokensPerMinute !== undefined && <small class="key-id">≤ {formatCount(key.tokensPerMinute)} tokens a minute</small>}
      {minute !== undefined && (key.requestsPerMinute !== undefined || key.tokensPerMinute !== undefined) && (
        <small class="key-id">
          minute {minute.minute.slice(11)} UTC: {formatCount(minute.requests)} calls, {formatCount(minute.tokens)} tokens
        </small>
      )}
    </td>
  );
}

function KeyRefusals({ gatewayKey: key }: { gatewayKey: GatewayKey }) {
  const refusals = GATEWAY_REJECTION_REASONS.filter((reason) => (key.rejections[reason] ?? 0) > 0);
  return (
    <td class="num refusals">
      {formatCount(refusals.reduce((sum, reason) => sum + (key.rejections[reason] ?? 0), 0))}
      {refusals.map((reason) => (
        <small key={reason} class="key-id">
          {words(reason).replace(/_/g, ' ')}: {formatCount(key.rejections[reason] ?? 0)}
        </small>
      ))}
    </td>
  );
}

export interface KeyActions {
  readonly onChange: () => void;
  readonly onRotate: () => void;
  readonly onRevoke: () => void;
}

/** One key of the keys table: who it is, its status, spend, limits, refusals, models, and what may be done to it. */
export function KeyRow({ gatewayKey: key, team, actions }: { gatewayKey: GatewayKey; team: string | undefined; actions: KeyActions }) {
  return (
    <tr>
      <th scope="row">
        {key.name}
        <small class="key-id">
          <code class="id">{key.keyId}</code> issued {formatTime(key.issuedAt)}
        </small>
        {team !== undefined && <small class="key-id">team {team}</small>}
      </th>
      <KeyStatus gatewayKey={key} />
      <td class="period">{key.period}</td>
      <td class="num spent">
        <Credits credits={key.spentCredits} money={key.money} figure="spentCredits" />
      </td>
      <td class="num held">
        <Credits credits={key.heldCredits} money={key.money} figure="heldCredits" />
      </td>
      <KeyLimits gatewayKey={key} />
      <KeyRefusals gatewayKey={key} />
      <td class="models">{key.models === undefined ? 'every model' : key.models.join(', ')}</td>
      <td class="actions">
        {key.revokedAt === undefined && (
          <>
            <button type="button" class="secondary" aria-label={`Change ${key.name}`} onClick={actions.onChange}>
              Change
            </button>
            <button type="button" class="secondary" aria-label={`Rotate ${key.name}`} onClick={actions.onRotate}>
              Rotate
            </button>
            <button type="button" class="secondary danger" aria-label={`Revoke ${key.name}`} onClick={actions.onRevoke}>
              Revoke
            </button>
          </>
        )}
      </td>
    </tr>
  );
}
