/** Bytes cut into chunks at the given offsets (those outside the bytes, and repeats, ignored): how a socket might deliver them. */
export function cutAt(bytes: Buffer, at: readonly number[]): Buffer[] {
  const points = [...new Set(at)].filter((point) => point > 0 && point < bytes.length).sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const point of [...points, bytes.length]) {
    chunks.push(bytes.subarray(from, point));
    from = point;
  }
  return chunks;
}
