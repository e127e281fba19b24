export function OperationPage({ operationId }: { operationId: string }) {
  return <h1>Operation <code class="id">{operationId}</code></h1>;
}
