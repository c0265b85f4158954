/**
 * The scanner's rule set (issue 29): what in a node pack's source and metadata files deserves a
 * moderator's look. Each rule has a stable id, a severity, a one-line rationale and a matcher over
 * one file's text; test/Moderation/Rules.fast.test.ts holds, for each, a pack that triggers it and
 * one that must not. The rules read text, line by line: they never run or import the code.
 *
 * Severities decide the outcome (Scanner.ts): a `high` finding holds the version for a review, a
 * `medium` one lets it go Active with the finding shown to its publisher, a `low` one is recorded.
 * High is kept for what a pack that is not malicious has no reason to do, so that the popular
 * packs raise none; what many honest packs do (installing packages at import) is medium.
 *
 * `ruleSetVersion` changes with any rule: every scan records the version that ran, and a rescan
 * after a change brings every version up to date.
 */

export const ruleSetVersion = "2026.11.28"

export type Severity = "high" | "medium" | "low"

/** A rule's hit in one file: the 1-based line and a short excerpt of it. */
export interface Hit {
  readonly line: number
  readonly excerpt: string
}

export interface Rule {
  readonly id: string
  readonly severity: Severity
  readonly rationale: string
  /** The files the rule reads, by their path in the archive. */
  readonly appliesTo: (path: string) => boolean
  readonly match: (text: string, path: string) => ReadonlyArray<Hit>
}

/** A finding: a rule's hit in a file of the archive (or of the archive itself: `file` is then its entry). */
export interface Finding {
  readonly rule: string
  readonly severity: Severity
  readonly file: string
  readonly line?: number
  readonly excerpt: string
}

/** The longest excerpt kept of a line. */
const excerptLength = 160

export const excerptOf = (line: string) => {
  const trimmed = line.trim()
  return trimmed.length <= excerptLength ? trimmed : `${trimmed.slice(0, excerptLength - 1)}…`
}

const extension = (path: string) => path.slice(path.lastIndexOf(".") + 1).toLowerCase()
const baseName = (path: string) => path.slice(path.lastIndexOf("/") + 1).toLowerCase()

const isPython = (path: string) => extension(path) === "py"
const isJavaScript = (path: string) => ["js", "mjs", "cjs", "ts"].includes(extension(path))
const isShell = (path: string) => ["sh", "bash", "zsh", "bat", "cmd", "ps1"].includes(extension(path))
const isCode = (path: string) => isPython(path) || isJavaScript(path) || isShell(path)
const isRequirements = (path: string) => /^requirements[\w.-]*\.txt$/.test(baseName(path)) || baseName(path) === "pyproject.toml"

/** The files the scanner reads at all: code, install scripts and the metadata naming dependencies. */
export const scannedFile = (path: string) => isCode(path) || isRequirements(path)

/** A comment line, for the languages scanned (its matches are not what the code does). */
const commented = (line: string, path: string) => {
  const t = line.trimStart()
  return isPython(path) || isShell(path) || isRequirements(path) ? t.startsWith("#") || /^(rem|::)\s/i.test(t) : t.startsWith("//") || t.startsWith("*")
}

/** Each line matching every one of `patterns` (comments left out). */
const linesMatching = (...patterns: ReadonlyArray<RegExp>) => (text: string, path: string): Array<Hit> => {
  const hits: Array<Hit> = []
  const lines = text.split("\n")
  for (const [i, line] of lines.entries()) {
    if (commented(line, path)) continue
    if (patterns.every((p) => p.test(line))) hits.push({ line: i + 1, excerpt: excerptOf(line) })
  }
  return hits
}

/** Python's module level: a statement that starts at column 0 and is not a definition. */
const moduleLevel = (line: string) => /^[A-Za-z_]/.test(line) && !/^(def|class|async\s+def|if\s+__name__|@)/.test(line)

const decoders = /\b(b64decode|b32decode|b85decode|a85decode|decodebytes|unhexlify|fromhex|zlib\.decompress|decompress\(|marshal\.loads|codecs\.decode|bz2\.|lzma\.|gzip\.decompress)/
const executes = /\b(exec|eval|compile)\s*\(/
const jsExecutes = /\b(eval\s*\(|new\s+Function\s*\(|Function\s*\(\s*atob)/
const jsDecoders = /\b(atob\s*\(|Buffer\.from\s*\([^)]*['"](base64|hex)['"])/
/** A call that reads from the network (an import of a networking module is not one). */
const networkRead = /\b(requests\.(get|post|put|request)\s*\(|urlopen\s*\(|urlretrieve\s*\(|httpx\.(get|post|stream|Client)\s*\(|aiohttp\.ClientSession\s*\(|HTTPS?Connection\s*\(|fetch\s*\()/
const shellCall = /\b(os\.system|os\.popen|subprocess\.(run|call|check_call|check_output|Popen)|commands\.getoutput)\s*\(/
/** pip run by the code: `pip.main(`, `[..., "pip", "install", ...]`, or a command string given to a shell call (a message telling the user to run pip is not one). */
const pipInstall = /(\bpip\.main\s*\(|['"]pip3?['"]\s*,\s*['"]install['"]|\b(os\.system|subprocess\.\w+|run_script|check_call|Popen)\s*\(\s*f?['"][^'"]*\bpip3?\s+install\b)/

/** Names assigned from a network read, one hop: `r = requests.get(...)`, `body = urlopen(u).read()`. */
const networkNames = (text: string) => {
  const names = new Set<string>()
  for (const line of text.split("\n")) {
    const assigned = /^\s*([A-Za-z_]\w*)\s*=\s*(.*)$/.exec(line)
    if (assigned !== null && networkRead.test(assigned[2]!)) names.add(assigned[1]!)
  }
  return names
}

const credentialPaths = new RegExp(
  [
    String.raw`\.ssh[/\\]`,
    String.raw`\bid_(rsa|ed25519|ecdsa|dsa)\b`,
    String.raw`\.aws[/\\]credentials`,
    String.raw`\.config[/\\]gcloud`,
    String.raw`\.azure[/\\]`,
    String.raw`\.kube[/\\]config`,
    String.raw`\.docker[/\\]config\.json`,
    String.raw`\.netrc\b`,
    String.raw`\.git-credentials`,
    String.raw`(Google[/\\]Chrome|Chromium|BraveSoftware|Microsoft[/\\]Edge)[/\\]User Data`,
    String.raw`\.mozilla[/\\]firefox`,
    String.raw`\bLogin Data\b`,
    String.raw`\bLocal State\b`,
    String.raw`Library[/\\]Keychains`,
    String.raw`\bwallet\.dat\b`,
    String.raw`\bdiscord[/\\]Local Storage`
  ].join("|"),
  "i"
)

/** A `.env` read from another folder than the node's own: the user's home, a parent, an absolute path. */
const foreignDotenv = /(expanduser\s*\(\s*['"]~[/\\][^'"]*\.env['"]|['"](\.\.[/\\])+[^'"]*\.env['"]|['"]\/(home|root|Users)\/[^'"]*\.env['"])/

const persistence = new RegExp(
  [
    String.raw`Start Menu[/\\]+Programs[/\\]+Startup`,
    String.raw`CurrentVersion[/\\]+Run\b`,
    // a shell profile opened or appended to, not merely named (an editor's list of file types names them)
    String.raw`(open\s*\(|>>)[^\n]{0,80}\.(bashrc|bash_profile|zshrc|profile)\b`,
    // a crontab installed from a pipe or from stdin
    String.raw`\|\s*crontab\b|\bcrontab\s+-(\s|$)`,
    String.raw`Library[/\\]LaunchAgents[/\\]`,
    String.raw`/etc/(cron\.|crontab|systemd/system|init\.d|rc\.local)`
  ].join("|"),
  "i"
)

/** A file opened for writing (or written) at an absolute, home-relative or parent path. */
const writesOutside = /(open\s*\(\s*(f?['"](\/|~|[A-Za-z]:\\|\.\.[/\\])[^'"]*['"]|os\.path\.expanduser\([^)]*\))[^)]*['"][wa]b?\+?['"]|shutil\.(copy|copyfile|move)\s*\([^,]+,\s*['"](\/|~|[A-Za-z]:\\)(?!tmp))/

const longBlob = /['"`][A-Za-z0-9+/=_-]{1200,}['"`]/

/** A requirement that names a URL or a git repository without a pinned commit or hash. */
const unpinnedRequirement = (requirement: string) => {
  const t = requirement.trim()
  if (t === "" || t.startsWith("#")) return false
  const git = /git\+[a-z]+:\/\/[^\s"']+/i.exec(t)
  if (git !== null) return !/@[0-9a-f]{40}\b/i.test(git[0])
  return /(^|\s|@\s*)https?:\/\/\S+/i.test(t) && !/#sha256=[0-9a-f]{64}/i.test(t)
}

/**
 * The lines of a requirements file, or of pyproject.toml those inside a dependency list (the
 * `dependencies` arrays, the optional-dependencies table) with each quoted requirement: a
 * project's URLs table names URLs that are not requirements.
 */
const requirementLines = (text: string, path: string): Array<{ readonly line: number; readonly requirements: ReadonlyArray<string> }> => {
  const lines = text.split("\n")
  if (baseName(path) !== "pyproject.toml") return lines.map((line, i) => ({ line: i + 1, requirements: [line] }))
  const found: Array<{ line: number; requirements: Array<string> }> = []
  let table = ""
  let inArray = false
  for (const [i, line] of lines.entries()) {
    const header = /^\s*\[([^\]]+)\]\s*$/.exec(line)
    if (header !== null) {
      table = header[1]!.trim()
      inArray = false
      continue
    }
    const opens = /^\s*([\w.-]+)\s*=\s*\[/.exec(line)
    if (opens !== null) inArray = opens[1] === "dependencies" || table === "project.optional-dependencies" || opens[1] === "requires"
    if (inArray) found.push({ line: i + 1, requirements: [...line.matchAll(/"([^"]*)"|'([^']*)'/g)].map((m) => m[1] ?? m[2]!) })
    if (inArray && line.includes("]")) inArray = false
  }
  return found
}

export const rules: ReadonlyArray<Rule> = [
  {
    id: "exec-decoded-data",
    severity: "high",
    rationale: "Runs code that was decoded, decompressed or unmarshalled first: the way hidden payloads run",
    appliesTo: (p) => isPython(p) || isJavaScript(p),
    match: (text, path) =>
      isPython(path) ? linesMatching(executes, decoders)(text, path) : linesMatching(jsExecutes, jsDecoders)(text, path)
  },
  {
    id: "download-and-run",
    severity: "high",
    rationale: "Downloads code and runs it at once: what runs is whatever the server sends that day",
    appliesTo: isCode,
    match: (text, path) =>
      isPython(path)
        ? linesMatching(executes, networkRead)(text, path)
        : isJavaScript(path)
        ? linesMatching(jsExecutes, /\bfetch\s*\(|https?\.get\s*\(|axios/)(text, path)
        : linesMatching(/\b(curl|wget|iwr|Invoke-WebRequest)\b[^\n]*\|\s*(sudo\s+)?(ba|z|da)?sh\b|\|\s*iex\b|DownloadString[^\n]*\|\s*iex|IEX\s*\(\s*\(?New-Object/i)(text, path)
  },
  {
    id: "shell-from-network",
    severity: "high",
    rationale: "Builds a shell command from what the network returned: a remote server chooses the command",
    appliesTo: isPython,
    match: (text, path) => {
      const names = networkNames(text)
      return linesMatching(shellCall)(text, path).filter((hit) => {
        const line = text.split("\n")[hit.line - 1]!
        const argument = line.slice(line.search(shellCall))
        return networkRead.test(argument) || [...names].some((name) => new RegExp(`\\b${name}\\b`).test(argument))
      })
    }
  },
  {
    id: "credential-access",
    severity: "high",
    rationale: "Reads where users keep secrets (SSH keys, browser profiles, cloud credentials, another folder's .env)",
    appliesTo: isCode,
    match: (text, path) => [...linesMatching(credentialPaths)(text, path), ...linesMatching(foreignDotenv)(text, path)]
      .sort((a, b) => a.line - b.line)
  },
  {
    id: "persistence",
    severity: "high",
    rationale: "Writes where the system starts programs (startup folders, shell profiles, cron, launch agents)",
    appliesTo: isCode,
    match: linesMatching(persistence)
  },
  {
    id: "write-outside-node",
    severity: "medium",
    rationale: "Writes files outside the node's folder (absolute, home or parent paths)",
    appliesTo: isPython,
    match: linesMatching(writesOutside)
  },
  {
    id: "encoded-blob",
    severity: "medium",
    rationale: "Holds a long encoded blob in its source: data that readers of the code cannot review",
    appliesTo: (p) => isPython(p) || isJavaScript(p),
    match: linesMatching(longBlob)
  },
  {
    id: "install-at-import",
    severity: "medium",
    rationale: "Installs packages from its Python code, when imported or installed: the user gets software the requirements do not list",
    appliesTo: isPython,
    match: (text, path) => linesMatching(pipInstall)(text, path)
  },
  {
    id: "network-at-import",
    severity: "low",
    rationale: "Calls the network at module level, as soon as the host application imports the node",
    appliesTo: isPython,
    match: (text, path) => linesMatching(networkRead)(text, path).filter((hit) => moduleLevel(text.split("\n")[hit.line - 1]!))
  },
  {
    id: "unpinned-url-requirement",
    severity: "low",
    rationale: "Depends on a URL or a git repository without a pinned commit or hash: what is installed can change",
    appliesTo: isRequirements,
    match: (text, path) =>
      requirementLines(text, path).flatMap(({ line, requirements }) =>
        requirements.some(unpinnedRequirement) ? [{ line, excerpt: excerptOf(text.split("\n")[line - 1]!) }] : []
      )
  }
]

/** Findings the scanner raises about the archive's entries themselves (Scanner.ts). */
export const entryRules = {
  nativeExecutable: {
    id: "native-executable",
    severity: "medium",
    rationale: "Ships a native executable or shared library: code that cannot be reviewed as source"
  },
  notText: {
    id: "binary-source",
    severity: "medium",
    rationale: "A source file that is not text: binary data under a source file's name"
  },
  notScanned: {
    id: "not-scanned",
    severity: "low",
    rationale: "A file the scanner did not read whole (over its size limit, or past the archive's reading budget)"
  }
} as const satisfies Record<string, { readonly id: string; readonly severity: Severity; readonly rationale: string }>

/** Every rule as the public listing shows it. */
export const ruleSummaries = [...rules.map(({ id, rationale, severity }) => ({ id, rationale, severity })), ...Object.values(entryRules)]

/** Findings of one text file. At most `perRule` hits of a rule are kept per file. */
export const scanText = (path: string, text: string, perRule = 5): Array<Finding> =>
  rules.filter((rule) => rule.appliesTo(path)).flatMap((rule) =>
    rule.match(text, path).slice(0, perRule).map((hit) => ({ rule: rule.id, severity: rule.severity, file: path, line: hit.line, excerpt: hit.excerpt }))
  )

const decoder = new TextDecoder("utf-8", { fatal: true })

/** The text of a source file, or undefined when its bytes are not text (NUL, or not UTF-8). */
export const asText = (bytes: Uint8Array): string | undefined => {
  if (bytes.includes(0)) return undefined
  try {
    return decoder.decode(bytes)
  } catch {
    return undefined
  }
}

/** What the rules make of one source or metadata file: its findings, or that it is not text. */
export type FileScan = { readonly text: true; readonly findings: ReadonlyArray<Finding> } | { readonly text: false }

/** Scans one file's bytes: the work a scan thread does (ScanThread.ts). */
export const scanFile = (path: string, bytes: Uint8Array): FileScan => {
  const text = asText(bytes)
  return text === undefined ? { text: false } : { text: true, findings: scanText(path, text) }
}
