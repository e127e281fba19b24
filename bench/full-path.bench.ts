/**
 * Fully-accounted invocations per second through RunOperationCommand on the embedded store (issue 7):
 * every lifecycle transition and every attempt durably in the log, a scripted provider with zero
 * latency, conversations of 3 turns with 2 tool calls, 100 organizations, a fixed number in flight.
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { NestFactory } from '@nestjs/core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChangeOrganizationSettingsCommand, GrantCreditsCommand } from '../src/accounts/account-commands';
import { AppModule } from '../src/app.module';
import { PublishOperationCommand } from '../src/catalog/publish-operation.command';
import { LedgerFeaturesModule } from '../src/features/ledger-features.module';
import type { OperationFeature } from '../src/features/operation-feature';
import { RunOperationCommand } from '../src/invocations/run-operation.command';
import { ScriptedProvider, scriptedToolUse, type ScriptedStep } from '../src/runtime';

const OPERATION_ID = 'bench.three-turns';
const ORGANIZATIONS = 100;
const USAGE = { inputTokens: 120, outputTokens: 20, cacheWriteTokens: 0, cacheReadTokens: 0 };

function threeTurns(latencyMs: number): ScriptedStep[] {
  const wait = latencyMs > 0 ? () => new Promise<void>((resolve) => setTimeout(resolve, latencyMs)) : undefined;
  const step = (reply: ReturnType<typeof scriptedToolUse>): ScriptedStep => (wait ? async () => (await wait(), reply) : reply);
  return [
    step(scriptedToolUse([{ id: 't1', name: 'lookup', input: { q: 'a' } }], { usage: USAGE })),
    step(scriptedToolUse([{ id: 't2', name: 'lookup', input: { q: 'b' } }], { usage: USAGE })),
    step(scriptedToolUse([{ id: 't3', name: 'submit_answer', input: { value: 42 } }], { usage: USAGE })),
  ];
}

function benchFeature(latencyMs: number): OperationFeature {
  return {
    operationId: OPERATION_ID,
    prepare: () => ({
      system: [{ type: 'text', text: 'Answer with submit_answer.', stable: true }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'question' }] }],
      tools: [{ name: 'lookup', description: 'Looks up.', inputSchema: LOOKUP_SCHEMA, effect: 'read', handler: () => '42' }],
      answerTool: { name: 'submit_answer', description: 'Answers.', inputSchema: ANSWER_SCHEMA, judge: () => ({ accepted: true }) },
    }),
    scriptedModel: () => new ScriptedProvider(threeTurns(latencyMs), { recordRequests: false }),
  };
}
const LOOKUP_SCHEMA = { type: 'object', properties: { q: { type: 'string' } } };
const ANSWER_SCHEMA = { type: 'object', properties: { value: { type: 'number' } }, required: ['value'] };

export interface FullPathResult {
  readonly invocations: number;
  readonly inFlight: number;
  readonly providerLatencyMs: number;
  readonly seconds: number;
  readonly invocationsPerSecond: number;
  readonly overheadP50Ms: number;
  readonly overheadP99Ms: number;
  readonly peakRssMiB: number;
}

export async function measure(options: { invocations: number; inFlight: number; providerLatencyMs: number }): Promise<FullPathResult> {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-bench-'));
  @Module({ imports: [LedgerFeaturesModule.register(benchFeature(options.providerLatencyMs))] })
  class BenchFeatureModule {}
  const app = await NestFactory.createApplicationContext(
    AppModule.forRoot({ env: { LEDGER_STORE: `sqlite:${join(directory, 'ledger.sqlite')}` }, imports: [BenchFeatureModule] }),
    { logger: false },
  );
  try {
    const bus = app.get(CommandBus);
    await bus.execute(
      new PublishOperationCommand(OPERATION_ID, {
        routing: { provider: 'scripted', model: 'bench-model' },
        limits: { maxTurns: 5, maxToolCalls: 5, totalTimeMs: 60_000, attemptTimeoutMs: 10_000, maxOutputTokens: 1_024, maxAttemptsPerTurn: 3 },
        prices: { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 0, cacheReadPerMTok: 0 },
        creditHold: 10_000,
        enabled: true,
      }),
    );
    for (let org = 0; org < ORGANIZATIONS; org++) {
      await bus.execute(new GrantCreditsCommand(`org-${org}`, 1_000_000_000, 'bench', 'bench-grant'));
      await bus.execute(new ChangeOrganizationSettingsCommand(`org-${org}`, { maxRunning: options.inFlight }));
    }
    const overheads: number[] = [];
    let next = 0;
    let peakRss = process.memoryUsage().rss;
    const started = performance.now();
    const worker = async (): Promise<void> => {
      while (next < options.invocations) {
        const index = next++;
        const t0 = performance.now();
        const result = await bus.execute(
          new RunOperationCommand({ operationId: OPERATION_ID, organizationId: `org-${index % ORGANIZATIONS}`, input: {} }),
        );
        if (result.state !== 'settled' || result.outcome !== 'completed') throw new Error(`unexpected result ${JSON.stringify(result)}`);
        overheads.push(performance.now() - t0 - 3 * options.providerLatencyMs);
        if (index % 256 === 0) peakRss = Math.max(peakRss, process.memoryUsage().rss);
      }
    };
    await Promise.all(Array.from({ length: options.inFlight }, worker));
    const seconds = (performance.now() - started) / 1000;
    overheads.sort((a, b) => a - b);
    const at = (q: number) => overheads[Math.min(overheads.length - 1, Math.floor(q * overheads.length))]!;
    return {
      invocations: options.invocations,
      inFlight: options.inFlight,
      providerLatencyMs: options.providerLatencyMs,
      seconds: round(seconds),
      invocationsPerSecond: Math.round(options.invocations / seconds),
      overheadP50Ms: round(at(0.5)),
      overheadP99Ms: round(at(0.99)),
      peakRssMiB: Math.round(Math.max(peakRss, process.memoryUsage().rss) / 2 ** 20),
    };
  } finally {
    await app.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

export async function run(): Promise<FullPathResult[]> {
  const results = [
    await measure({ invocations: Number(process.env.BENCH_INVOCATIONS ?? 10_000), inFlight: 64, providerLatencyMs: 0 }),
    await measure({ invocations: Number(process.env.BENCH_LATENT_INVOCATIONS ?? 5_000), inFlight: 1_000, providerLatencyMs: 50 }),
  ];
  console.table(results);
  return results;
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
