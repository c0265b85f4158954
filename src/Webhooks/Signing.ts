/**
 * Standard Webhooks signatures: `v1,` and the base64 HMAC-SHA256, keyed by the secret's bytes, of
 * `{webhook-id}.{webhook-timestamp}.{body}`. Several signatures, space-separated, are allowed: after
 * a rotation a message is signed by the new secret and, for a grace period, by the previous one.
 */
import { createHmac } from "node:crypto"

/** A secret as customers and the Standard Webhooks libraries take it. */
export const secretText = (secret: Uint8Array) => `whsec_${Buffer.from(secret).toString("base64")}`

export const signature = (secret: Uint8Array, id: string, timestampSeconds: number, body: string) =>
  `v1,${createHmac("sha256", secret).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`

/** The three headers of a message sent at `timestampSeconds`, signed by each of `secrets`. */
export const signedHeaders = (secrets: ReadonlyArray<Uint8Array>, id: string, timestampSeconds: number, body: string) => ({
  "webhook-id": id,
  "webhook-timestamp": String(timestampSeconds),
  "webhook-signature": secrets.map((secret) => signature(secret, id, timestampSeconds, body)).join(" ")
})
