import { useQuery } from "@tanstack/react-query";
import { billingQueries } from "../../api/queries/billing";
import { Card, QueryView, Time } from "../../ui/components";
import { count } from "../../ui/format";
import { Table } from "../../ui/Table";

/** Models that ran but could not be priced (unknown to the catalog, unrated, or self-priced). */
export function Gaps() {
  const gaps = useQuery(billingQueries.gaps());
  return (
    <Card title="Pricing gaps" wide>
      <QueryView query={gaps} action="read pricing gaps">
        {(g) => (
          <>
            <p className="small caveat" data-testid="caveat">
              {g.caveat_before}
            </p>
            {g.gaps.length === 0 ? (
              <p className="state empty">Every model that ran could be priced.</p>
            ) : (
              <Table
                testId="gaps-table"
                rows={g.gaps}
                rowKey={(x) => x.model_id}
                columns={[
                  { header: "Model", cell: (x) => x.model_id },
                  { header: "Modality", cell: (x) => x.modality },
                  { header: "Requests", align: "r", className: "num", cell: (x) => count(x.requests) },
                  { header: "Unknown", align: "r", className: "num", cell: (x) => count(x.unknown_requests) },
                  { header: "Unrated", align: "r", className: "num", cell: (x) => count(x.unrated_requests) },
                  { header: "Self-priced", align: "r", className: "num", cell: (x) => count(x.self_priced_requests) },
                  { header: "Last seen", cell: (x) => <Time value={x.last_seen} /> },
                ]}
              />
            )}
          </>
        )}
      </QueryView>
    </Card>
  );
}

