import { Context } from "effect"

/** The authenticated caller of a request. */
export interface User {
  /** The token's `sub`. */
  readonly id: string
  readonly email: string | undefined
  readonly name: string | undefined
  readonly isSiteAdmin: boolean
}

export class CurrentUser extends Context.Tag("CurrentUser")<CurrentUser, User>() {}
