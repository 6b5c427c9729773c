import { useAuth } from "../auth";
import { Page } from "../ui/components";
import { Gaps } from "./billing/Gaps";
import { RateCard } from "./billing/RateCard";
import { Usage } from "./billing/Usage";

/** Usage and margin per tenant, the rate card in effect (editable by operator write keys) and pricing gaps. */
export function BillingPage() {
  const { whoami } = useAuth();
  const canEditRules = whoami.can.write && whoami.tenant_id === null;
  return (
    <Page title="Billing">
      <Usage />
      <RateCard canEdit={canEditRules} />
      <Gaps />
    </Page>
  );
}
