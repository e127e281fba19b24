/** The text printed when the demo starts: its tokens and a few curl lines to try (README material). */

export interface DemoBannerInput {
  /** e.g. `http://localhost:3000` */
  readonly baseUrl: string;
  /** Where the API's routes are mounted below `baseUrl` (`http.prefix` as a path, e.g. `/ledger`); `''` for none. */
  readonly routePrefix?: string;
  readonly operationId: string;
  readonly organizationId: string;
  /** Role → token, for the demo tokens actually added (a configured token of the same text wins). */
  readonly tokens: ReadonlyArray<{ readonly role: string; readonly token: string; readonly organizationId?: string }>;
  readonly routing: string;
}

export function demoBanner({ baseUrl, routePrefix = '', operationId, organizationId, tokens, routing }: DemoBannerInput): string {
  // The OpenAPI document stays at the server's root (configureHttp); the routes move with the prefix.
  const api = `${baseUrl}${routePrefix}`;
  const member = tokens.find((entry) => entry.role === 'org_member')?.token ?? '<org_member token>';
  const admin = tokens.find((entry) => entry.role === 'org_admin')?.token ?? '<org_admin token>';
  const body = JSON.stringify({ operationId, organizationId, input: { question: 'What is (6+1)*6?' } });
  const lines = [
    '',
    `llm-ledger demo (LEDGER_DEMO=1) — DEMO ONLY: these tokens are public; never enable the demo on real data.`,
    `  operation ${operationId} routed to ${routing}; organization ${organizationId}`,
    '  tokens:',
    ...tokens.map((entry) => `    ${entry.role.padEnd(10)} ${entry.token}${entry.organizationId === undefined ? '' : `  (${entry.organizationId})`}`),
    '',
    '  # run demo.arithmetic (answers once settled) and keep its id',
    `  ID=$(curl -s -X POST ${api}/v1/invocations -H 'Authorization: Bearer ${member}' -H 'Content-Type: application/json' ` +
      `-d '${body}' | tee /dev/stderr | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).invocationId'); echo`,
    '  # why it ended as it did, its attempts, and what it cost the organization',
    `  curl -s ${api}/v1/invocations/$ID/explanation -H 'Authorization: Bearer ${member}'; echo`,
    `  curl -s ${api}/v1/invocations/$ID/attempts -H 'Authorization: Bearer ${member}'; echo`,
    `  curl -s ${api}/v1/organizations/${organizationId}/balance -H 'Authorization: Bearer ${admin}'; echo`,
    `  # the API: ${baseUrl}/docs`,
    '',
  ];
  return `${lines.join('\n')}\n`;
}
