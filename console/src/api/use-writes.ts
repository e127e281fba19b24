import { useState } from 'preact/hooks';
import { describeWriteError } from '../api/client';

/** A write in flight or refused, for the form or confirmation that sent it. */
export interface Writing {
  readonly busy: boolean;
  readonly error?: string;
}

export interface Writes<Task, Draft> {
  /** What the section is doing besides listing (a form open, a question asked); undefined: nothing. */
  readonly task: Task | undefined;
  readonly writing: Writing;
  /** The one form's fields as typed. */
  readonly draft: Draft;
  setDraft(draft: Draft): void;
  /** Starts `task` (undefined: closes it) with the form at `draft`, the empty form unless told. */
  open(task: Task | undefined, draft?: Draft): void;
  /** Sends one write; on success closes the task and calls `then`, on refusal says why beside the form. */
  write<T>(what: string, send: () => Promise<T>, then?: (answer: T) => void): Promise<void>;
}

/**
 * The state of a section that writes through the API: one task at a time with its form's draft, its
 * write's progress or refusal, and `onWritten` told after each success (to read the lists again).
 */
export function useWrites<Task, Draft>(empty: Draft, onWritten: () => void): Writes<Task, Draft> {
  const [task, setTask] = useState<Task | undefined>(undefined);
  const [writing, setWriting] = useState<Writing>({ busy: false });
  const [draft, setDraft] = useState<Draft>(empty);
  return {
    task,
    writing,
    draft,
    setDraft,
    open(next, start = empty) {
      setTask(next);
      setDraft(start);
      setWriting({ busy: false });
    },
    async write(what, send, then) {
      setWriting({ busy: true });
      try {
        const answer = await send();
        then?.(answer);
        setTask(undefined);
        setWriting({ busy: false });
        onWritten();
      } catch (error: unknown) {
        setWriting({ busy: false, error: describeWriteError(error, what) });
      }
    },
  };
}
