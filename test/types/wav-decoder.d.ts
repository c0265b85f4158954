/** wav-decoder 1.3.0 ships no types: the part the tests use. */
declare module "wav-decoder" {
  export interface AudioData {
    readonly sampleRate: number
    readonly numberOfChannels: number
    /** Frames per channel. */
    readonly length: number
    /** One array per channel, samples in [-1, 1]. */
    readonly channelData: ReadonlyArray<Float32Array>
  }
  export const decode: {
    (buffer: ArrayBuffer | Buffer, options?: { readonly symmetric?: boolean }): Promise<AudioData>
    sync: (buffer: ArrayBuffer | Buffer, options?: { readonly symmetric?: boolean }) => AudioData
  }
}
