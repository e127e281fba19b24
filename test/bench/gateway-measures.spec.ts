import { StreamReader, requestBody, streamDelta, streamHead, streamTail } from '../../bench/gateway/messages-wire';
import { bucketsBetween, histogramBuckets, histogramQuantile, percentiles } from '../../bench/gateway/percentiles';

describe('the gateway benchmark reads llm-ledger\'s overhead histogram as Prometheus would', () => {
  const exposition = [
    '# HELP ledger_gateway_overhead_seconds the gateway\'s own time',
    '# TYPE ledger_gateway_overhead_seconds histogram',
    'ledger_gateway_overhead_seconds_bucket{le="0.001",model="a"} 30',
    'ledger_gateway_overhead_seconds_bucket{le="0.002",model="a"} 60',
    'ledger_gateway_overhead_seconds_bucket{le="0.005",model="a"} 69',
    'ledger_gateway_overhead_seconds_bucket{le="+Inf",model="a"} 70',
    'ledger_gateway_overhead_seconds_bucket{model="b",le="0.001"} 20',
    'ledger_gateway_overhead_seconds_bucket{model="b",le="0.002"} 30',
    'ledger_gateway_overhead_seconds_bucket{model="b",le="0.005"} 30',
    'ledger_gateway_overhead_seconds_bucket{model="b",le="+Inf"} 30',
    'ledger_gateway_overhead_seconds_sum{model="a"} 0.1',
    'ledger_gateway_other_seconds_bucket{le="0.001"} 999',
  ].join('\n');

  it('sums every label set into one set of cumulative buckets, and ignores other metrics', () => {
    expect(histogramBuckets(exposition, 'ledger_gateway_overhead_seconds')).toEqual(
      new Map([
        [0.001, 50],
        [0.002, 90],
        [0.005, 99],
        [Infinity, 100],
      ]),
    );
  });

  it('says the metric is absent rather than reading it as empty', () => {
    expect(histogramBuckets(exposition, 'ledger_gateway_missing_seconds')).toBeUndefined();
  });

  it('interpolates inside the bucket a quantile falls in, as histogram_quantile does', () => {
    const buckets = histogramBuckets(exposition, 'ledger_gateway_overhead_seconds')!;
    expect(histogramQuantile(buckets, 0.5)).toBeCloseTo(0.001, 9);
    expect(histogramQuantile(buckets, 0.7)).toBeCloseTo(0.0015, 9);
    expect(histogramQuantile(buckets, 0.99)).toBeCloseTo(0.005, 9);
  });

  it('reads a quantile in the +Inf bucket as the highest finite bound, and nothing observed as NaN', () => {
    const buckets = histogramBuckets(exposition, 'ledger_gateway_overhead_seconds')!;
    expect(histogramQuantile(buckets, 0.999)).toBe(0.005);
    expect(histogramQuantile(new Map([[0.001, 0], [Infinity, 0]]), 0.5)).toBeNaN();
  });

  it('takes what a run observed as the later scrape minus the earlier one', () => {
    const before = new Map([[0.001, 10], [Infinity, 20]]);
    const after = new Map([[0.001, 15], [Infinity, 40]]);
    expect(bucketsBetween(before, after)).toEqual(new Map([[0.001, 5], [Infinity, 20]]));
    expect(bucketsBetween(undefined, after)).toEqual(after);
  });
});

describe('the gateway benchmark\'s client statistics', () => {
  it('quotes nearest-rank percentiles, so p99 of 100 samples is the 99th smallest', () => {
    const samples = Array.from({ length: 100 }, (_, index) => 100 - index);
    expect(percentiles(samples)).toMatchObject({ count: 100, p50: 50, p90: 90, p99: 99, max: 100, mean: 50.5 });
    expect(percentiles([]).count).toBe(0);
  });

  it('times each stamped event from the chunk that completes it, not the one that begins it', () => {
    const reader = new StreamReader();
    const trips: number[] = [];
    const delta = streamDelta();
    const stamp = BigInt(/ts=(\d+)/.exec(delta)![1]!);
    const head = streamHead('msg_1', 100);
    reader.push(head + delta.slice(0, 40), stamp + 1_000n, trips);
    expect(trips).toEqual([]);
    reader.push(delta.slice(40), stamp + 5_000n, trips);
    expect(trips).toEqual([5]);
    expect(reader.stopped).toBe(false);
    reader.push(streamTail(100, 1), stamp + 9_000n, trips);
    expect(reader.stopped).toBe(true);
    expect(reader.events).toBe(7);
  });

  it('sends a Messages body of about the asked size, with the stream flag only when streaming', () => {
    const streamed = JSON.parse(requestBody({ stream: true, bytes: 1024 }).toString('utf8')) as Record<string, unknown>;
    const plain = requestBody({ stream: false, bytes: 1024 });
    expect(streamed).toMatchObject({ stream: true, max_tokens: expect.any(Number), messages: [{ role: 'user', content: expect.any(String) }] });
    expect(JSON.parse(plain.toString('utf8'))).not.toHaveProperty('stream');
    expect(plain.length).toBe(1024);
  });
});
