/**
 * The shape of every aggregate (after Emmett's decide/evolve/initialState): three pure functions and
 * plain records. Deciders import only types and tiny pure helpers; loading a stream, deciding and
 * appending with the expected revision happen once, in the generic command handler (src/aggregates/).
 */

/**
 * An event as a decider emits it. `data` is plain JSON: no bigint, no Date (ISO-8601 strings), no
 * `undefined` values (an absent optional field is left out), credits as integer numbers.
 */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  readonly type: Type;
  readonly data: Data;
}

/** A request to change an aggregate, shaped like an event so handlers and tests treat both alike. */
export interface DomainCommand<Type extends string = string, Data = unknown> {
  readonly type: Type;
  readonly data: Data;
}

/**
 * `decide` returns the events a command causes (an empty array when it changes nothing, e.g. an
 * idempotent repeat) or throws a DomainError and causes nothing. `evolve` folds one event into the
 * state and never throws for an event `decide` could have produced. Neither mutates its arguments,
 * because the command handler caches states between commands.
 */
export interface Decider<Command, Event extends DomainEvent, State> {
  decide(command: Command, state: State): readonly Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}

/** Folds a stream's events, in order, into the state they describe. */
export function replay<Command, Event extends DomainEvent, State>(
  decider: Decider<Command, Event, State>,
  events: readonly Event[],
  from: State = decider.initialState(),
): State {
  let state = from;
  for (const event of events) state = decider.evolve(state, event);
  return state;
}
