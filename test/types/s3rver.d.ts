/** s3rver 3.7.1 ships no types: the part the tests use. */
declare module "s3rver" {
  import type { AddressInfo } from "node:net"
  export interface S3rverOptions {
    readonly address?: string
    readonly port?: number
    readonly silent?: boolean
    readonly directory?: string
    readonly resetOnClose?: boolean
    readonly configureBuckets?: ReadonlyArray<{ readonly name: string }>
  }
  export default class S3rver {
    constructor(options: S3rverOptions)
    run(): Promise<AddressInfo>
    close(): Promise<void>
  }
}
