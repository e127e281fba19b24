/**
 * What an operation hands the runtime about its tools and its final answer (docs/rules.md).
 */
import type { CacheTtl } from './provider.port';

/** `write` tools change something outside the conversation; they only ever run alone in a batch. */
export type ToolEffect = 'read' | 'write';

/** What a handler or judge receives beside the input. */
export interface ToolContext {
  /** Fires at the conversation deadline or on cancellation; long work should stop when it does. */
  readonly signal: AbortSignal;
  /** The model's id for this call. */
  readonly callId: string;
}

export interface ToolSpec<Input = unknown> {
  readonly name: string;
  readonly description: string;
  /** The cache lifetime its definition asks for (tool definitions are always cacheable); default `5m`. */
  readonly cacheTtl?: CacheTtl;
  /** JSON Schema of the input object; arguments that fail it never reach the handler. */
  readonly inputSchema: Record<string, unknown>;
  readonly effect: ToolEffect;
  /**
   * Runs the call. A string result is sent as is, anything else as JSON. A thrown error's message
   * (bounded, without stack) reaches the model, so it must be fit to disclose (BR-CAP-PFM-LLM-002-09).
   * A tool without a handler is answered with an `unavailable_tool` error (BR-CAP-PFM-LLM-002-15).
   */
  handler?(input: Input, context: ToolContext): unknown;
}

/** A judge's decision on a final answer. `feedback` goes back to the model as the call's error result. */
export type Verdict = { readonly accepted: true } | { readonly accepted: false; readonly feedback: string };

/** Context of a judge; `callId` is absent when the answer is a text turn. */
export interface JudgeContext {
  readonly signal: AbortSignal;
  readonly callId?: string;
}

/** The designated answer tool (e.g. `submit_answer`): calling it offers a final answer. */
export interface AnswerToolSpec<Input = unknown> {
  readonly name: string;
  readonly description: string;
  /** The cache lifetime its definition asks for (tool definitions are always cacheable); default `5m`. */
  readonly cacheTtl?: CacheTtl;
  readonly inputSchema: Record<string, unknown>;
  /**
   * Accepts or rejects the answer. A judge that throws, or returns anything but `{ accepted: true }`,
   * rejects it (BR-CAP-PFM-LLM-002-10). Only schema-valid input is ever judged.
   */
  judge(input: Input, context: JudgeContext): Verdict | Promise<Verdict>;
}

/** Judges a text-only final answer when the operation designates no answer tool. */
export type TextJudge = (text: string, context: JudgeContext) => Verdict | Promise<Verdict>;
