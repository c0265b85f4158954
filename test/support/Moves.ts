/**
 * The model of a state machine's moves (Domain/Transitions.ts) that the tests predict answers
 * with: asking for the state a record is in changes nothing; a listed move is made; any other is
 * refused.
 */
export const move = <S extends string>(moves: { readonly [From in S]: ReadonlyArray<S> }, from: S, to: S): "same" | "allowed" | "refused" =>
  from === to ? "same" : moves[from].includes(to) ? "allowed" : "refused"
