/**
 * Given/when/then for pure deciders (after Emmett's DeciderSpecification):
 *
 *   const spec = deciderSpec(invocationDecider);
 *   spec.given([estimated]).when(reserve).then([reserved]);
 *   spec.given([settled]).when(settle).thenThrows(IllegalTransitionError, { state: 'settled' });
 *
 * `then` asserts the exact list (so nothing else was emitted), that the events are plain JSON, and
 * returns the state after them. Given events and the command are deep-frozen, so a decider or evolve
 * that mutates its input fails the test.
 */
import type { Decider, DomainCommand, DomainEvent } from '../../src/domain/decider';

type ErrorClass<E extends Error> = abstract new (...args: never[]) => E;

export interface WhenStep<Event, State> {
  /** Exactly these events, in order, and nothing else. Returns the state after them. */
  then(expected: readonly Event[]): State;
  /** No event at all (an idempotent repeat, a no-op). Returns the unchanged state. */
  thenNothing(): State;
  /** The decider throws an instance of `errorClass`; `expected` is matched against its properties. */
  thenThrows<E extends Error>(errorClass: ErrorClass<E>, expected?: Partial<Record<keyof E, unknown>> | ((error: E) => void)): E;
}

export interface GivenStep<Command, Event, State> {
  when(command: Command): WhenStep<Event, State>;
  /** The state the given events fold into, for assertions on helpers. */
  state(): State;
}

export interface DeciderSpec<Command, Event, State> {
  given(events: readonly Event[]): GivenStep<Command, Event, State>;
}

export function deciderSpec<Command extends DomainCommand, Event extends DomainEvent, State>(
  decider: Decider<Command, Event, State>,
): DeciderSpec<Command, Event, State> {
  return {
    given(events) {
      const history = events.map((event) => deepFreeze(structuredClone(event)));
      const fold = (): State => history.reduce((state, event) => decider.evolve(state, event), decider.initialState());
      return {
        state: fold,
        when(command) {
          const frozenCommand = deepFreeze(structuredClone(command));
          const run = (): readonly Event[] => decider.decide(frozenCommand, fold());
          const then = (expected: readonly Event[]): State => {
            const emitted = run();
            expect(emitted).toStrictEqual(expected);
            // Stored as JSON: a Date, a bigint or an undefined-valued key would not survive the trip.
            expect(JSON.parse(JSON.stringify(emitted))).toStrictEqual(emitted);
            return emitted.reduce((state, event) => decider.evolve(state, event), fold());
          };
          return {
            then,
            thenNothing: () => then([]),
            thenThrows(errorClass, expected) {
              let thrown: unknown;
              let emitted: readonly Event[] | undefined;
              try {
                emitted = run();
              } catch (error) {
                thrown = error;
              }
              if (emitted !== undefined) {
                throw new Error(`expected ${errorClass.name} but the decider emitted ${JSON.stringify(emitted)}`);
              }
              expect(thrown).toBeInstanceOf(errorClass);
              const error = thrown as InstanceType<typeof errorClass>;
              if (typeof expected === 'function') expected(error);
              else if (expected !== undefined) expect(error).toMatchObject(expected);
              return error;
            },
          };
        },
      };
    },
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
