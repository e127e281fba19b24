import { segment } from '../api/client';
import type { Balance } from '../api/types';
import { useApi } from '../api/use-api';
import { Figures, Section, Show, usePageTitle } from '../components/common';
import { formatCount, formatCountWithMoney } from '../format';
import { GatewayBatchesSection } from '../organization/gateway-batches-section';
import { GatewayKeysSection } from '../organization/gateway-keys-section';
import { InvocationsSection } from '../organization/invocations-section';
import { LedgerSection } from '../organization/ledger-section';
import { UsageSection } from '../organization/usage-section';

export function OrganizationPage({ organizationId }: { organizationId: string }) {
  usePageTitle(`Organization ${organizationId}`);
  const base = `/v1/organizations/${segment(organizationId)}`;
  const balance = useApi<Balance>(`${base}/balance`);
  return (
    <>
      <h1>
        Organization <code class="id">{organizationId}</code>
      </h1>
      <Section id="balance" title="Balance">
        <Show loaded={balance} what="the balance">
          {(b) => (
            <Figures
              label="Balance figures"
              entries={[
                ['Available', formatCountWithMoney(b.available, b.money, 'available')],
                ['Granted', formatCountWithMoney(b.granted, b.money, 'granted')],
                ['Adjustments', formatCountWithMoney(b.adjustments, b.money, 'adjustments')],
                ['Held', formatCountWithMoney(b.held, b.money, 'held')],
                ['Charged', formatCountWithMoney(b.charged, b.money, 'charged')],
                ['Running', formatCount(b.running)],
              ]}
            />
          )}
        </Show>
      </Section>
      <UsageSection organizationId={organizationId} />
      <InvocationsSection organizationId={organizationId} />
      <GatewayBatchesSection organizationId={organizationId} />
      <LedgerSection organizationId={organizationId} />
      <GatewayKeysSection organizationId={organizationId} />
    </>
  );
}
