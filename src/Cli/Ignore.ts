/**
 * Patterns in the syntax of `.gitignore`, for `.registryignore` and for the manifest's `includes`:
 *
 * - blank lines and lines starting with `#` are skipped (`\#` is a literal `#`); trailing spaces
 *   are dropped unless escaped with `\`;
 * - `!` re-includes what an earlier pattern excluded (`\!` is a literal `!`); the last pattern
 *   that matches a path decides;
 * - a trailing `/` matches directories only (and so every file under them);
 * - a pattern with a `/` at its start or middle is anchored to the root (a leading `/` is dropped);
 *   one without matches a name at any depth;
 * - `*` matches within one path segment, `?` one character but `/`, `[a-z]` / `[!a-z]` a class;
 *   a whole segment `**` matches any leading directories (first), everything inside (last), or
 *   zero or more directories (between two others).
 *
 * As in git, a file inside an excluded directory stays excluded: a later `!` cannot re-include a
 * file whose parent directory is excluded (it can re-include the directory itself).
 */

export interface Rule {
  readonly negated: boolean
  readonly directoryOnly: boolean
  readonly regex: RegExp
  /** The line as written, for messages. */
  readonly source: string
}

const escapeRegex = (c: string) => c.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&")

/** `[...]` at `start` (the `[`) as a regex class and the index after it, or undefined if it is not closed. */
const readClass = (glob: string, start: number): { readonly regex: string; readonly end: number } | undefined => {
  let i = start + 1
  let negated = false
  if (glob[i] === "!" || glob[i] === "^") {
    negated = true
    i++
  }
  let body = ""
  // a `]` right after the opening (or its negation) is a member, not the end
  let first = true
  while (i < glob.length) {
    const c = glob[i]!
    if (c === "]" && !first) {
      if (body === "") return undefined
      // a class never matches the separator
      return { regex: negated ? `[^/${body}]` : `(?!/)[${body}]`, end: i + 1 }
    }
    if (c === "\\" && i + 1 < glob.length) {
      body += escapeRegex(glob[i + 1]!)
      i += 2
    } else if (c === "-" && !first && glob[i + 1] !== "]" && i + 1 < glob.length) {
      body += "-"
      i++
    } else {
      body += escapeRegex(c)
      i++
    }
    first = false
  }
  return undefined
}

/** One path segment's glob (no `/`) as a regex source. */
const segmentRegex = (glob: string): string => {
  let out = ""
  for (let i = 0; i < glob.length;) {
    const c = glob[i]!
    if (c === "*") {
      // consecutive stars inside a segment are one star
      while (glob[i] === "*") i++
      out += "[^/]*"
    } else if (c === "?") {
      out += "[^/]"
      i++
    } else if (c === "[") {
      const cls = readClass(glob, i)
      if (cls === undefined) {
        out += "\\["
        i++
      } else {
        out += cls.regex
        i = cls.end
      }
    } else if (c === "\\" && i + 1 < glob.length) {
      out += escapeRegex(glob[i + 1]!)
      i += 2
    } else {
      out += escapeRegex(c)
      i++
    }
  }
  return out
}

/** A glob of whole-path syntax (already stripped of `!`, trailing `/` and a leading `/`) as a regex. */
const globRegex = (glob: string, anchored: boolean): RegExp => {
  const segments = glob.split("/")
  let out = ""
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1
    if (segment === "**") {
      // leading or middle: zero or more directories; trailing: everything inside
      out += last ? (index === 0 ? ".*" : ".+") : "(?:[^/]+/)*"
    } else {
      out += segmentRegex(segment) + (last ? "" : "/")
    }
  })
  // `a/**` was written as `a/` + `.+`; anything else that is unanchored may start at any depth
  return new RegExp(`^${anchored ? "" : "(?:[^/]+/)*"}${out}$`)
}

/** A class range the wrong way round (`[z-a]`) makes a pattern that matches nothing, as in git. */
const compile = (glob: string, anchored: boolean): RegExp => {
  try {
    return globRegex(glob, anchored)
  } catch {
    return /(?!)/
  }
}

/** One line of a pattern file as a rule, or undefined for a blank line or a comment. */
export const parseRule = (line: string): Rule | undefined => {
  let text = line.replace(/\r$/, "")
  if (text.startsWith("#")) return undefined
  // trailing spaces go, unless escaped (`\ ` stays, and reads as a space)
  while (text.endsWith(" ") && !text.endsWith("\\ ")) text = text.slice(0, -1)
  if (text === "") return undefined
  let negated = false
  if (text.startsWith("!")) {
    negated = true
    text = text.slice(1)
  } else if (text.startsWith("\\!") || text.startsWith("\\#")) {
    text = text.slice(1)
  }
  let directoryOnly = false
  if (text.endsWith("/") && !text.endsWith("\\/")) {
    directoryOnly = true
    text = text.replace(/\/+$/, "")
  }
  if (text === "") return undefined
  const anchored = text.includes("/")
  if (text.startsWith("/")) text = text.replace(/^\/+/, "")
  if (text === "") return undefined
  return { negated, directoryOnly, regex: compile(text, anchored), source: line }
}

export const parseRules = (text: string): ReadonlyArray<Rule> =>
  text.split("\n").flatMap((line) => {
    const rule = parseRule(line)
    return rule === undefined ? [] : [rule]
  })

/** Whether the last rule matching `path` (a directory when `isDirectory`) excludes it; undefined if none matches. */
const decide = (rules: ReadonlyArray<Rule>, path: string, isDirectory: boolean): boolean | undefined => {
  for (let i = rules.length - 1; i >= 0; i--) {
    const rule = rules[i]!
    if (rule.directoryOnly && !isDirectory) continue
    if (rule.regex.test(path)) return !rule.negated
  }
  return undefined
}

/** Whether the rules exclude the file at `path` (relative, `/`-separated), directly or through a parent directory. */
export const isIgnored = (rules: ReadonlyArray<Rule>, path: string): boolean => {
  if (rules.length === 0) return false
  const segments = path.split("/")
  for (let depth = 1; depth < segments.length; depth++) {
    if (decide(rules, segments.slice(0, depth).join("/"), true) === true) return true
  }
  return decide(rules, path, false) === true
}
