/** The id part of a `<category>-<id>` stream name (docs/lifecycle.md), e.g. `invocation-1234` → `1234`. */
export function streamId(streamName: string, category: string): string | undefined {
  const prefix = `${category}-`;
  return streamName.startsWith(prefix) ? streamName.slice(prefix.length) : undefined;
}
