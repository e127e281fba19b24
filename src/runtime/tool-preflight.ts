/**
 * The per-call preflight (docs/rules.md step 10 and "Rules for a batch of tool calls"): ONE
 * side-effect-free classification pass over a tool batch exactly as the model requested it, before
 * anything runs. It either rejects the whole batch (batch-fatal, nothing runs) or gives every call a
 * status that the run phase consumes as is.
 *
 * Recoverability is a positive whitelist of exactly two kinds; any other fault, including one nobody
 * foresaw (a validator that throws), is batch-fatal, so a new kind can never become silently repairable.
 */
import Ajv2020, { type ErrorObject } from 'ajv/dist/2020';
import type { ToolUseBlock } from './provider.port';
import { CompiledSchemaCache } from './compiled-schema.cache';
import { boundToolErrorText } from './tool-error-text';
import type { AnswerToolSpec, ToolEffect, ToolSpec } from './tool.types';

/** The only per-call faults answered with an error result instead of ending the conversation. */
export const RECOVERABLE_FAULT_KINDS = ['unavailable_tool', 'malformed_arguments'] as const;
export type RecoverableFaultKind = (typeof RECOVERABLE_FAULT_KINDS)[number];
const RECOVERABLE: ReadonlySet<string> = new Set<string>(RECOVERABLE_FAULT_KINDS);

/** Why a whole batch was refused (outcome `protocol_error`). */
export type BatchViolation =
  | 'invalid_call_id'
  | 'duplicate_call_id'
  | 'reused_call_id'
  | 'write_in_multi_call_batch'
  | 'unclassified_fault';

/** A compiled input check (Ajv's ValidateFunction has this shape). */
export interface InputValidator {
  (input: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/** One tool the model may call, with its compiled schema. */
export interface CatalogEntry {
  readonly name: string;
  /** `answer` for the designated answer tool, which the judge handles instead of a handler. */
  readonly role: 'tool' | 'answer';
  /** Undefined for the answer tool. */
  readonly effect?: ToolEffect;
  readonly validate: InputValidator;
  readonly tool?: ToolSpec;
}

export interface ToolCatalog {
  readonly entries: ReadonlyMap<string, CatalogEntry>;
  readonly answerToolName?: string;
}

/** A call's status after preflight. `text` is what the model is told, already bounded. */
export type CallStatus =
  | { readonly kind: 'run'; readonly entry: CatalogEntry }
  | { readonly kind: 'answer' }
  | { readonly kind: 'repairable'; readonly fault: RecoverableFaultKind; readonly text: string };

export type PreflightResult =
  | { readonly ok: true; readonly calls: readonly CallStatus[] }
  | { readonly ok: false; readonly violation: BatchViolation; readonly callId?: string };

let ajv: Ajv2020 | undefined;
const compiled = new CompiledSchemaCache<InputValidator>((schema) => {
  // addUsedSchema off: two operations may reuse a schema `$id` without colliding in the shared instance.
  ajv ??= new Ajv2020({ strict: false, allErrors: false, validateFormats: false, addUsedSchema: false });
  return ajv.compile(schema) as InputValidator;
});

/**
 * Compiles a JSON Schema (2020-12) once and caches it by content (see CompiledSchemaCache: equal
 * schemas in fresh objects share one validator; at most MAX_COMPILED_SCHEMAS are kept). Throws on a
 * schema that does not compile, which is a configuration error. Formats are not checked (no format
 * vocabulary is loaded).
 */
export function compileInputSchema(schema: Record<string, unknown>): InputValidator {
  return compiled.get(schema);
}

/**
 * Builds the catalog for one operation: unique names, compiled schemas. Throws TypeError on a duplicate
 * name, an answer tool named like a tool, an unknown effect, or a schema that does not compile.
 */
export function buildToolCatalog(tools: readonly ToolSpec[], answerTool?: AnswerToolSpec): ToolCatalog {
  const entries = new Map<string, CatalogEntry>();
  const add = (entry: CatalogEntry): void => {
    if (typeof entry.name !== 'string' || entry.name.length === 0) throw new TypeError('a tool needs a non-empty name');
    if (entries.has(entry.name)) throw new TypeError(`tool name "${entry.name}" is used twice`);
    entries.set(entry.name, entry);
  };
  for (const tool of tools) {
    if (tool.effect !== 'read' && tool.effect !== 'write') {
      throw new TypeError(`tool "${tool.name}" has effect ${String(tool.effect)}; expected 'read' or 'write'`);
    }
    add({ name: tool.name, role: 'tool', effect: tool.effect, validate: compileInputSchema(tool.inputSchema), tool });
  }
  if (answerTool !== undefined) {
    add({ name: answerTool.name, role: 'answer', validate: compileInputSchema(answerTool.inputSchema) });
  }
  return { entries, answerToolName: answerTool?.name };
}

/** The model-facing text for input that failed its schema: where and what, nothing internal. */
export function malformedArgumentsText(toolName: string, errors: readonly ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  const where = first?.instancePath ? first.instancePath : 'the input';
  const what = first?.message ?? 'is invalid';
  const extra =
    first?.keyword === 'additionalProperties' && typeof first.params['additionalProperty'] === 'string'
      ? ` (${JSON.stringify(first.params['additionalProperty'])})`
      : '';
  return boundToolErrorText(
    `Arguments for tool ${JSON.stringify(toolName)} do not match its input schema: ${where} ${what}${extra}. Fix them and call again.`,
  );
}

function unavailableToolText(toolName: string): string {
  return boundToolErrorText(`Tool ${JSON.stringify(toolName)} is not available. Use one of the tools you were given.`);
}

type CallCheck =
  | { readonly ok: true; readonly status: CallStatus }
  | { readonly ok: false; readonly kind: string; readonly text: string };

function checkCall(call: ToolUseBlock, catalog: ToolCatalog): CallCheck {
  const entry = catalog.entries.get(call.name);
  // The answer tool was validated and judged at step 6; its result is the judge's feedback.
  if (entry?.role === 'answer') return { ok: true, status: { kind: 'answer' } };
  if (entry === undefined || entry.tool?.handler === undefined) {
    return { ok: false, kind: 'unavailable_tool', text: unavailableToolText(call.name) };
  }
  if (!entry.validate(call.input)) {
    return { ok: false, kind: 'malformed_arguments', text: malformedArgumentsText(call.name, entry.validate.errors) };
  }
  return { ok: true, status: { kind: 'run', entry } };
}

/**
 * Classifies `batch` in one pass. Batch-fatal checks run against the original request first (call ids
 * fresh and unique, no `write` tool beside another call), so a recoverable sibling can never launder an
 * unsafe batch into a runnable one. `earlierCallIds` are the ids of every earlier turn's calls.
 */
export function preflightToolCalls(
  batch: readonly ToolUseBlock[],
  catalog: ToolCatalog,
  earlierCallIds: ReadonlySet<string>,
): PreflightResult {
  const ids = new Set<string>();
  for (const call of batch) {
    if (typeof call.id !== 'string' || call.id.length === 0) return { ok: false, violation: 'invalid_call_id' };
    if (ids.has(call.id)) return { ok: false, violation: 'duplicate_call_id', callId: call.id };
    if (earlierCallIds.has(call.id)) return { ok: false, violation: 'reused_call_id', callId: call.id };
    ids.add(call.id);
  }
  if (batch.length > 1) {
    for (const call of batch) {
      if (catalog.entries.get(call.name)?.effect === 'write') {
        return { ok: false, violation: 'write_in_multi_call_batch', callId: call.id };
      }
    }
  }
  const calls: CallStatus[] = [];
  for (const call of batch) {
    let check: CallCheck;
    try {
      check = checkCall(call, catalog);
    } catch {
      return { ok: false, violation: 'unclassified_fault', callId: call.id };
    }
    if (check.ok) calls.push(check.status);
    else if (RECOVERABLE.has(check.kind)) {
      calls.push({ kind: 'repairable', fault: check.kind as RecoverableFaultKind, text: check.text });
    } else return { ok: false, violation: 'unclassified_fault', callId: call.id };
  }
  return { ok: true, calls };
}
