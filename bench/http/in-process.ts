import { fork } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InProcessRequest, InProcessResult } from './in-process.child';

/** Runs the in-process side (in-process.child.ts) in a fresh process and returns what it measured. */
export async function measureInProcess(request: InProcessRequest): Promise<InProcessResult> {
  // Its log goes to a file, as the service's does (service-process.ts).
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-in-process-log-'));
  const log = openSync(join(directory, 'in-process.log'), 'w');
  const child = fork(join(__dirname, 'in-process.child.js'), [], { stdio: ['ignore', log, 'inherit', 'ipc'] });
  closeSync(log);
  try {
    return await reported(child, request);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

function reported(child: ReturnType<typeof fork>, request: InProcessRequest): Promise<InProcessResult> {
  return new Promise((resolve, reject) => {
    child.once('message', (message: { result?: InProcessResult; error?: string }) =>
      message.result !== undefined ? resolve(message.result) : reject(new Error(message.error)),
    );
    child.once('exit', (code) => reject(new Error(`the in-process benchmark exited with ${code} before reporting`)));
    child.send(request);
  });
}
