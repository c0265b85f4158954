/** Markdown read by the tests that replay documented commands. */

/** The marker a page puts on the line before a shell block that `testFile` replays. */
export const replayMarker = (testFile: string) => `<!-- replayed by ${testFile} -->`

/** The shell blocks right after a `marker` line, each with where its marker starts in `markdown`. */
export const shellBlocksAfter = (markdown: string, marker: string) => {
  const escaped = marker.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  return [...markdown.matchAll(new RegExp(`^${escaped}\\n\`\`\`sh\\n([\\s\\S]*?)\\n\`\`\``, "gm"))]
    .map((m) => ({ index: m.index, script: m[1]! }))
}
