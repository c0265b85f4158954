/**
 * The state machines of CONTRACT.md ("States"). A move not listed is refused with 409 and
 * leaves the state unchanged; asking for the state a record is already in is not a move and
 * changes nothing.
 */
import type { HostNodePolicy } from "./HostNode.ts"
import type { NodeStatus, NodeVersionStatus } from "./Node.ts"
import type { PublisherStatus } from "./Publisher.ts"

type Moves<S extends string> = { readonly [From in S]: ReadonlyArray<S> }

export const publisherStatusMoves: Moves<PublisherStatus> = {
  PublisherStatusActive: ["PublisherStatusBanned"],
  PublisherStatusBanned: ["PublisherStatusActive"]
}

export const nodeStatusMoves: Moves<NodeStatus> = {
  NodeStatusActive: ["NodeStatusDeleted", "NodeStatusBanned"],
  NodeStatusBanned: ["NodeStatusActive"],
  NodeStatusDeleted: ["NodeStatusActive"]
}

export const nodeVersionStatusMoves: Moves<NodeVersionStatus> = {
  NodeVersionStatusPending: ["NodeVersionStatusActive", "NodeVersionStatusFlagged", "NodeVersionStatusDeleted"],
  NodeVersionStatusFlagged: ["NodeVersionStatusActive", "NodeVersionStatusBanned", "NodeVersionStatusDeleted"],
  NodeVersionStatusActive: ["NodeVersionStatusFlagged", "NodeVersionStatusBanned", "NodeVersionStatusDeleted"],
  NodeVersionStatusBanned: ["NodeVersionStatusActive"],
  NodeVersionStatusDeleted: []
}

export const hostNodePolicyMoves: Moves<HostNodePolicy> = {
  HostNodePolicyActive: ["HostNodePolicyBanned", "HostNodePolicyLocalOnly"],
  HostNodePolicyBanned: ["HostNodePolicyActive", "HostNodePolicyLocalOnly"],
  HostNodePolicyLocalOnly: ["HostNodePolicyActive", "HostNodePolicyBanned"]
}

/** `same`: nothing to do; `allowed`: a listed move; `refused`: a 409. */
export const move = <S extends string>(moves: Moves<S>, from: S, to: S): "same" | "allowed" | "refused" =>
  from === to ? "same" : moves[from].includes(to) ? "allowed" : "refused"

/** The states from which `to` may be reached (itself included: no move), for conditional writes. */
export const statesReaching = <S extends string>(moves: Moves<S>, to: S): ReadonlyArray<S> =>
  (Object.keys(moves) as Array<S>).filter((from) => move(moves, from, to) !== "refused")
