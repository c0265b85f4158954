/**
 * Domain failures shared by several features: what went wrong in the registry's own words, with no
 * HTTP status. Services and repositories fail with these (features keep their own failures beside
 * their services); each feature's HTTP layer answers them with the client-facing classes of
 * ApiErrors.ts, through the one mapping of these in Answers.ts (`sharedAnswers`). Each says in
 * `message` what a client should read.
 */
import { Data } from "effect"

export class NodeMissing extends Data.TaggedError("NodeMissing")<{ readonly nodeId: string }> {
  override get message() {
    return `No node '${this.nodeId}'`
  }
}

export class VersionMissing extends Data.TaggedError("VersionMissing")<{ readonly nodeId: string; readonly version: string }> {
  override get message() {
    return `Node '${this.nodeId}' has no version '${this.version}'`
  }
}

/** The node exists but is not the publisher's (or is deleted): to the publisher, it is not there. */
export class NotPublishersNode extends Data.TaggedError("NotPublishersNode")<{ readonly publisherId: string; readonly nodeId: string }> {
  override get message() {
    return `Publisher '${this.publisherId}' has no node '${this.nodeId}'`
  }
}

/** The node is banned, or its publisher is: clients who ask for it are refused. */
export class NodeIsBanned extends Data.TaggedError("NodeIsBanned")<{ readonly nodeId: string }> {
  override get message() {
    return `Node '${this.nodeId}' is banned`
  }
}

export class PublisherMissing extends Data.TaggedError("PublisherMissing")<{ readonly publisherId: string }> {
  override get message() {
    return `No publisher '${this.publisherId}'`
  }
}

/** The publisher is banned: it may not create or publish nodes. */
export class PublisherIsBanned extends Data.TaggedError("PublisherIsBanned")<{ readonly publisherId: string }> {
  override get message() {
    return `Publisher '${this.publisherId}' is banned: its nodes cannot be published`
  }
}

/** The caller may not do this; `reason` says what it takes. */
export class NotPermitted extends Data.TaggedError("NotPermitted")<{ readonly reason: string }> {
  override get message() {
    return this.reason
  }
}

/** A move the record's state machine (Domain/Transitions.ts) refuses, or one a concurrent change made impossible. */
export class TransitionRefused extends Data.TaggedError("TransitionRefused")<{
  /** "A version", "A node", ... */
  readonly record: string
  readonly from: string
  readonly to: string
}> {
  override get message() {
    return `${this.record} cannot move from ${this.from} to ${this.to}`
  }
}

/** A body names a record other than the path's. */
export class IdMismatch extends Data.TaggedError("IdMismatch")<{ readonly field: string; readonly expected: string }> {
  override get message() {
    return `Invalid value for '${this.field}': it must be the path's '${this.expected}'`
  }
}
