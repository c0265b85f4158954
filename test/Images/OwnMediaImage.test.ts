/**
 * The skin enhancer takes this service's own media files whatever their scheme: the chain of the
 * host's skin enhancer node (comfy_api_nodes/nodes_magnific.py, MagnificImageSkinEnhancerNode)
 * uploads the image first (util/upload_helpers.py, `upload_images_to_comfyapi`: POST
 * /customers/storage with the file name alone, a PUT without Content-Type) and sends the
 * `download_url` as `image`. Under a plain-http PUBLIC_BASE_URL (the tests', the demo's) that URL
 * is http, which the skin enhancer refused. Other URLs keep their rules: https or nothing, and an
 * http URL that only looks like a media file is refused with the same answer as any http URL.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { PNG } from "pngjs"
import { onInstance } from "../support/Client.ts"
import { expectStatus, send, sendText } from "../support/Http.ts"
import { freshStart, simulatedAtPublicUrl, skinModes, tokenOf, withFakeVendor } from "../support/ImageProxy.ts"
import { onePixelPng } from "../support/MediaFixtures.ts"
import { type Running, Service } from "../support/Service.ts"

/** `upload_images_to_comfyapi` without a mime type: the file name alone, then a PUT with no Content-Type. */
const uploadImage = (service: Running, token: string, png: Buffer) =>
  Effect.gen(function*() {
    const created = yield* send<{ upload_url: string; download_url: string }>(service, "POST", "/customers/storage", {
      token,
      body: { file_name: "image.png" }
    })
    const { upload_url, download_url } = expectStatus(created, 200, "POST /customers/storage").body
    const put = yield* Effect.promise(() => fetch(onInstance(service, upload_url), { method: "PUT", body: png }))
    expect(put.status).toBe(204)
    return download_url
  })

/** The node's request of `mode` with its widgets' defaults (`sync_op`: the model's fields, JSON). */
const nodeBody = (mode: string, image: string) =>
  mode === "faithful"
    ? { image, sharpen: 0, smart_grain: 2, skin_detail: 80 }
    : mode === "flexible"
    ? { image, sharpen: 0, smart_grain: 2, optimized_for: "enhance_skin" }
    : { image, sharpen: 0, smart_grain: 2 }

layer(withFakeVendor(), { excludeTestServices: true })("the skin enhancer with this service's own media URL", (it) => {
  it.effect("each mode takes the uploaded file's http URL and hands it to the vendor as it is", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const image = yield* uploadImage(service, token, onePixelPng())
      expect(image.startsWith("http://")).toBe(true)
      for (const { mode, path, vendorPath } of skinModes) {
        fake.reset()
        const started = yield* send(service, "POST", path, { token, body: nodeBody(mode, image) })
        expectStatus(started, 200, `${mode} with ${image}`)
        expect(fake.requests().map((r) => [r.path, (r.body as { image: string }).image])).toEqual([[vendorPath, image]])
      }
    }))

  it.effect("any other http URL is refused as before, a media-shaped one included, with the same answer", () =>
    Effect.gen(function*() {
      const { service, fake, token } = yield* freshStart()
      const refusal = (image: string) => sendText(service, "POST", skinModes[0].path, { token, body: { image } })
      const plain = yield* refusal("http://images.example/face.png")
      expect(plain.status).toBe(400)
      for (
        const image of [
          "http://images.example/media/abc/face.png",
          "http://127.0.0.1:1/media/abc/face.png",
          "http://127.0.0.1.example/media/abc/face.png",
          `${service.config.publicBaseUrl}/elsewhere/abc/face.png`
        ]
      ) {
        const answer = yield* refusal(image)
        expect({ status: answer.status, text: answer.text }, image).toEqual({ status: plain.status, text: plain.text })
      }
      expect(JSON.parse(plain.text).message).toBe("Invalid value for 'image': expected base64 image data, a data: URL or an https URL")
      // https URLs and inline data as ever
      expectStatus(yield* send(service, "POST", skinModes[0].path, { token, body: { image: "https://images.example/media/a/b.png" } }), 200, "https")
      expect(fake.requests().filter((r) => r.method === "POST")).toHaveLength(1)
    }))
})

layer(simulatedAtPublicUrl, { excludeTestServices: true })("the node's chain on the demo (simulated vendor, plain http)", (it) => {
  it.effect("upload, enhance with the returned URL, poll to COMPLETED, download a decodable image", () =>
    Effect.gen(function*() {
      const service = yield* Service
      const token = yield* tokenOf(service, "dee")
      const image = yield* uploadImage(service, token, onePixelPng())
      expect(image.startsWith(`${service.config.publicBaseUrl}/media/`)).toBe(true)
      const started = yield* send<{ data: { task_id: string } }>(service, "POST", "/proxy/imagevendor/v1/ai/skin-enhancer/creative", {
        token,
        body: nodeBody("creative", image)
      })
      const taskId = expectStatus(started, 200, "start").body.data.task_id
      let generated: ReadonlyArray<string> = []
      for (let i = 0; i < 4 && generated.length === 0; i++) {
        const polled = yield* send<{ data: { status: string; generated: ReadonlyArray<string> } }>(
          service,
          "GET",
          `/proxy/imagevendor/v1/ai/skin-enhancer/${taskId}`,
          { token }
        )
        if (expectStatus(polled, 200, "poll").body.data.status === "COMPLETED") generated = polled.body.data.generated
      }
      const bytes = yield* Effect.promise(() => fetch(generated[0]!).then((r) => r.arrayBuffer()))
      expect(PNG.sync.read(Buffer.from(bytes)).width).toBeGreaterThan(0)
    }))
})
