/**
 * The in-process side of the HTTP benchmark, in a process of its own like the service: the same
 * application (AppModule, the embedded store, the demo seeded, the projections on their worker
 * thread) and the same invocations of `demo.arithmetic` for the same organizations, sent through
 * the command bus instead of HTTP, logged the same way. It reports to its parent over IPC: invocations, wall time and
 * this process's CPU time (all threads), from the first measured invocation until the read models
 * have caught up.
 */
import 'reflect-metadata';
import { CommandBus } from '@nestjs/cqrs';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChangeOrganizationSettingsCommand, GrantCreditsCommand } from '../../src/accounts/account-commands';
import { AppModule } from '../../src/composition/app.module';
import { DEMO_OPERATION_ID } from '../../src/demo/demo-catalog';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { LiveProjections } from '../../src/projection-runner';
import { BENCH_GRANT_CREDITS, BENCH_MAX_RUNNING, BENCH_QUESTION, benchOrganizations } from './http-load';

export interface InProcessRequest {
  readonly invocations: number;
  readonly warmupInvocations: number;
  readonly inFlight: number;
}

export interface InProcessResult {
  readonly invocations: number;
  readonly inFlight: number;
  readonly seconds: number;
  readonly invocationsPerSecond: number;
  readonly cpuSeconds: number;
  readonly cpuMsPerInvocation: number;
  /** Of that CPU, the share spent in the kernel, in percent. */
  readonly systemCpuPercent: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
}

async function measure({ invocations, warmupInvocations, inFlight }: InProcessRequest): Promise<InProcessResult> {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-in-process-bench-'));
  const app = await NestFactory.createApplicationContext(
    AppModule.forRoot({ env: { ...process.env, LEDGER_DEMO: '1', LEDGER_STORE: `sqlite:${join(directory, 'ledger.sqlite')}` } }),
    { bufferLogs: true },
  );
  // Logged as the service logs (nestjs-pino to its stdout, a file): the settlement lines are the
  // ledger's work, not HTTP's. Only the request lines are the service's own.
  app.useLogger(app.get(Logger));
  try {
    const bus = app.get(CommandBus);
    const organizations = benchOrganizations();
    for (const { organizationId } of organizations) {
      await bus.execute(new GrantCreditsCommand(organizationId, BENCH_GRANT_CREDITS, 'benchmark', 'bench-grant'));
      await bus.execute(new ChangeOrganizationSettingsCommand(organizationId, { maxRunning: BENCH_MAX_RUNNING }));
    }
    const run = async (count: number, latencies?: number[]): Promise<void> => {
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < count) {
          const { organizationId } = organizations[next++ % organizations.length]!;
          const started = performance.now();
          const result = await bus.execute(
            new RunOperationCommand({ operationId: DEMO_OPERATION_ID, organizationId, input: { question: BENCH_QUESTION } }),
          );
          if (result.state !== 'settled' || result.outcome !== 'completed') throw new Error(`unexpected result ${JSON.stringify(result)}`);
          latencies?.push(performance.now() - started);
        }
      };
      await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker));
    };
    await run(warmupInvocations);
    await app.get(LiveProjections).caughtUp();
    const latencies: number[] = [];
    const cpuAtStart = process.cpuUsage();
    const started = performance.now();
    await run(invocations, latencies);
    await app.get(LiveProjections).caughtUp();
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuAtStart);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    latencies.sort((a, b) => a - b);
    const at = (q: number): number => round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!);
    return {
      invocations,
      inFlight,
      seconds: round(seconds),
      invocationsPerSecond: Math.round(invocations / seconds),
      cpuSeconds: round(cpuSeconds),
      cpuMsPerInvocation: round((cpuSeconds * 1000) / invocations),
      systemCpuPercent: Math.round((100 * cpu.system) / Math.max(1, cpu.user + cpu.system)),
      latencyP50Ms: at(0.5),
      latencyP99Ms: at(0.99),
    };
  } finally {
    await app.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

process.once('message', (request: InProcessRequest) => {
  measure(request).then(
    (result) => process.send!({ result }, () => process.exit(0)),
    (error: unknown) => process.send!({ error: String(error instanceof Error ? error.stack : error) }, () => process.exit(1)),
  );
});
