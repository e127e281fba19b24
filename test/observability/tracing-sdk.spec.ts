import { trace } from '@opentelemetry/api';
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startTracing, tracesExportRequested } from '../../src/observability/tracing.sdk';

const HOOK = join(__dirname, '..', '..', 'tools', 'ts-require-hook.js');
const CHILD = join(__dirname, 'fixtures', 'otlp-export.child.ts');

describe('README.md the service exports traces only when the standard OTEL_* variables ask for it', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }, true],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none' }, false],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, false],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }, false],
  ])('with %j: %s', (env, expected) => {
    expect(tracesExportRequested(env)).toBe(expected);
  });

  it('starts nothing without them: the API stays a no-op and no span records', async () => {
    expect(await startTracing({})).toBeUndefined();
    const span = trace.getTracer('probe').startSpan('probe');
    expect(span.isRecording()).toBe(false);
    span.end();
  });

  describe('with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP receiver', () => {
    let receiver: Server;
    const received: { method: string; url: string; contentType: string; body: Buffer }[] = [];

    beforeAll(async () => {
      receiver = createServer((request: IncomingMessage, response) => {
        const chunks: Buffer[] = [];
        request.on('data', (chunk: Buffer) => chunks.push(chunk));
        request.on('end', () => {
          received.push({ method: request.method ?? '', url: request.url ?? '', contentType: request.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
          response.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    });

    afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

    it('starts the Node SDK with its OTLP exporter and sends the invocation span there on shutdown', async () => {
      // A child process: jest's module sandbox cannot run the exporter's own dynamic imports.
      const child = spawn(process.execPath, ['-r', HOOK, CHILD], {
        env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}` },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      const traces = received.find((request) => request.url === '/v1/traces');
      expect(traces).toMatchObject({ method: 'POST', contentType: 'application/x-protobuf' });
      // Protobuf carries strings as they are: the span's name and its conversation id are in the body.
      expect(traces!.body.includes(Buffer.from('invoke_agent otlp.probe'))).toBe(true);
      expect(traces!.body.includes(Buffer.from('inv-otlp-1'))).toBe(true);
    });
  });
});
