import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { InProcessRequest, InProcessResult } from './in-process.child';

/** Runs the in-process side (in-process.child.ts) in a fresh process and returns what it measured. */
export function measureInProcess(request: InProcessRequest): Promise<InProcessResult> {
  const child = fork(join(__dirname, 'in-process.child.js'), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (message: { result?: InProcessResult; error?: string }) =>
      message.result !== undefined ? resolve(message.result) : reject(new Error(message.error)),
    );
    child.once('exit', (code) => reject(new Error(`the in-process benchmark exited with ${code} before reporting`)));
    child.send(request);
  });
}
