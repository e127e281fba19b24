import { segment } from '../api/client';
import type { GatewayKey } from '../api/types';
import { useApi } from '../api/use-api';
import { Section, Show, TableScroll } from '../components/common';
import { formatCount, formatCredits, formatTime } from '../format';
import { useSession } from '../session/session';

/** The roles `GET …/gateway-keys` answers (docs/gateway.md); for the others the section is not shown. */
const KEY_READERS: ReadonlySet<string> = new Set(['system', 'org_admin']);

/** An organization's gateway keys, with what each spent in its period and what its calls hold, for the roles that may read them. */
export function GatewayKeysSection({ organizationId }: { organizationId: string }) {
  const { me } = useSession();
  if (!KEY_READERS.has(me.role)) return null;
  return <GatewayKeys organizationId={organizationId} />;
}

function GatewayKeys({ organizationId }: { organizationId: string }) {
  const keys = useApi<{ keys: GatewayKey[] }>(`/v1/organizations/${segment(organizationId)}/gateway-keys`);
  return (
    <Section id="gateway-keys" title="Gateway keys">
      <Show loaded={keys} what="the gateway keys">
        {({ keys: list }) =>
          list.length === 0 ? (
            <p class="muted">No gateway keys were issued for this organization.</p>
          ) : (
            <TableScroll label="Gateway keys table">
              <table>
                <caption class="visually-hidden">Gateway keys, oldest first, with their spend in the current period</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Key id</th>
                    <th scope="col">Period</th>
                    <th scope="col" class="num">Spent</th>
                    <th scope="col" class="num">Held</th>
                    <th scope="col">Spend limit</th>
                    <th scope="col">Models</th>
                    <th scope="col">Issued</th>
                    <th scope="col">Status</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((key) => (
                    <tr key={key.keyId}>
                      <th scope="row">{key.name}</th>
                      <td>
                        <code class="id">{key.keyId}</code>
                      </td>
                      <td>{key.period}</td>
                      <td class="num spent">{formatCount(key.spentCredits)}</td>
                      <td class="num held">{formatCount(key.heldCredits)}</td>
                      <td>{key.spendLimit === undefined ? 'none' : `${formatCredits(key.spendLimit.credits)} ${key.spendLimit.period === 'total' ? 'in total' : `a UTC ${key.spendLimit.period}`}`}</td>
                      <td>{key.models === undefined ? 'every model' : key.models.join(', ')}</td>
                      <td>{formatTime(key.issuedAt)}</td>
                      <td>{key.revokedAt === undefined ? 'live' : `revoked ${formatTime(key.revokedAt)}`}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
          )
        }
      </Show>
    </Section>
  );
}
