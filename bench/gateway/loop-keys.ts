/**
 * Which gateway key each closed loop of the load calls with, when llm-ledger's calls are spread over
 * several organizations (BENCH_GATEWAY_ORGANIZATIONS): loop `loop` takes `apiKeys[loop % n]`, so the
 * loops are shared out evenly and each keeps its key (a client per organization). Without keys the
 * target's headers stand as they are.
 */
export function loopHeaders(headers: Readonly<Record<string, string>>, apiKeys: readonly string[] | undefined, loop: number): Readonly<Record<string, string>> {
  if (apiKeys === undefined || apiKeys.length === 0) return headers;
  return { ...headers, 'x-api-key': apiKeys[loop % apiKeys.length]! };
}
