/**
 * The state machines of CONTRACT.md ("States"). A move not listed is refused and leaves the
 * state unchanged; asking for the state a record is already in is not a move and changes nothing.
 */
import type { HostNodeExtractStatus, HostNodePolicy } from "./HostNode.ts"
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

/**
 * A version's host-node extraction: records posted make it `success` from any state (more records
 * keep it so); a failure report makes it `failed` unless its records are in, which a later
 * failed run does not undo. A version stored before the status was kept counts as `pending`.
 */
export const hostNodeExtractMoves: Moves<HostNodeExtractStatus> = {
  pending: ["success", "failed"],
  failed: ["success"],
  success: []
}

/**
 * The states from which `to` may be reached, `to` itself included (asking for the state a record
 * is in changes nothing): a write checks the record's state against them in its own statement, so
 * no concurrent change slips between a check and its write.
 */
export const statesReaching = <S extends string>(moves: Moves<S>, to: S): ReadonlyArray<S> =>
  (Object.keys(moves) as Array<S>).filter((from) => from === to || moves[from].includes(to))
