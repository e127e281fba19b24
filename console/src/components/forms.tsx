import type { ComponentChildren } from 'preact';
import type { Writing } from '../api/use-writes';
import { TableScroll } from './common';

/** One labelled field of a form, with its hint under it. */
export function Field({ id, label, hint, children }: { id: string; label: string; hint?: string; children: ComponentChildren }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {hint !== undefined && (
        <small class="muted" id={`${id}-hint`}>
          {hint}
        </small>
      )}
    </div>
  );
}

/** A settings form: its fields in a grid, submit and cancel, and the service's refusal under them. */
export function SettingsForm(props: { label: string; submitLabel: string; writing: Writing; onSubmit: () => void; onCancel: () => void; children: ComponentChildren }) {
  return (
    <form
      class="key-form"
      aria-label={props.label}
      onSubmit={(event) => {
        event.preventDefault();
        props.onSubmit();
      }}
    >
      {props.children}
      <div class="form-actions">
        <button type="submit" disabled={props.writing.busy}>
          {props.submitLabel}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
      <WriteError writing={props.writing} />
    </form>
  );
}

function WriteError({ writing }: { writing: Writing }) {
  if (writing.error === undefined) return null;
  return (
    <p class="error" role="alert">
      {writing.error}
    </p>
  );
}

/** A question asked before a write that cannot be undone, named by `question` for screen readers. */
export function Confirmation(props: { question: string; confirmLabel: string; cancelLabel: string; writing: Writing; onConfirm: () => void; onCancel: () => void; children: ComponentChildren }) {
  return (
    <div class="confirm" role="group" aria-label={props.question}>
      <p>
        <strong>{props.question}</strong> {props.children}
      </p>
      <div class="form-actions">
        <button type="button" class="danger" disabled={props.writing.busy} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          {props.cancelLabel}
        </button>
      </div>
      <WriteError writing={props.writing} />
    </div>
  );
}

/** A whole number as typed, as a number; anything else as the text itself, for the service to judge and name. */
export const typedNumber = (text: string): number | string => (/^\d+$/.test(text.trim()) ? Number(text.trim()) : text);

/** Items of a list typed with commas or spaces between them. */
export const listOf = (text: string): string[] => text.split(/[\s,]+/).filter((item) => item !== '');

/** A column of a managed table: its heading, and whether it holds numbers (aligned right). */
export type Column = readonly [heading: string, numeric?: 'num'];

/**
 * A table of things a section manages (keys, teams): cells that wrap rather than scroll sideways, its
 * headings, and a last column for each row's actions. `children` are the rows.
 */
export function ManagedTable({ label, caption, columns, children }: { label: string; caption: string; columns: readonly Column[]; children: ComponentChildren }) {
  return (
    <TableScroll label={label}>
      <table class="keys-table">
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map(([heading, numeric]) => (
              <th key={heading} scope="col" class={numeric}>
                {heading}
              </th>
            ))}
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </TableScroll>
  );
}

/** A row under a managed table's row, across all its columns: the form or question of that row's task. */
export function TaskRow({ columns, children }: { columns: number; children: ComponentChildren }) {
  return (
    <tr class="task-row">
      <td colSpan={columns}>{children}</td>
    </tr>
  );
}
