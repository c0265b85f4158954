/**
 * `pyproject.toml` as a publish request: every key it maps, and a usage failure naming the key
 * for each kind of bad manifest.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { CliFailure, exitCodeOf, reportOf } from "../../src/Cli/Failure.ts"
import { parseManifest } from "../../src/Cli/Manifest.ts"

const full = `
[project]
name = "image-tools"
version = "1.2.0"
description = "Tools for images"
license = { file = "LICENSE" }
authors = [{ name = "Ada" }, { email = "bob@example.com" }]
dependencies = ["numpy>=1.26", "pillow"]
requires-python = ">=3.10"

[project.urls]
Homepage = "https://example.com"
"Source Code" = "https://example.com/acme/image-tools"

[tool.registry]
publisher_id = "acme"
display_name = "Image tools"
icon = "https://example.com/icon.png"
banner = "https://example.com/banner.png"
tags = ["image", "tools"]
includes = ["models/*.bin", "web/"]
supported_os = ["linux", "windows"]
supported_accelerators = ["cuda"]
supported_host_version = ">=1.0.0 <2.0.0"
supported_host_frontend_version = "^1.4.0"

[tool.other]
ignored = true
`

const failure = (text: string, options = {}): string => {
  const result = parseManifest(text, options)
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  expect(result.failure).toBeInstanceOf(CliFailure)
  const report = reportOf(result.failure)
  expect(report.code).toBe("bad_manifest")
  expect(exitCodeOf(report)).toBe(2)
  return report.message
}

describe("the manifest", () => {
  it("maps [project] and [tool.registry] onto the publish request", () => {
    const { payload, ...manifest } = Result.getOrThrow(parseManifest(full, { changelog: "First" }))
    // the decoded request: the version and ranges parsed as the service will
    expect(payload.node_version.version.text).toBe("1.2.0")
    expect(payload.node_version.supported_host_version?.intervals).toHaveLength(1)
    expect(manifest).toEqual({
      publisherId: "acme",
      nodeId: "image-tools",
      version: "1.2.0",
      includes: ["models/*.bin", "web/"],
      request: {
        node: {
          id: "image-tools",
          name: "Image tools",
          description: "Tools for images",
          author: "Ada, bob@example.com",
          license: "LICENSE",
          icon: "https://example.com/icon.png",
          banner_url: "https://example.com/banner.png",
          repository: "https://example.com/acme/image-tools",
          supported_os: ["linux", "windows"],
          supported_accelerators: ["cuda"],
          supported_host_version: ">=1.0.0 <2.0.0",
          supported_host_frontend_version: "^1.4.0",
          tags: ["image", "tools"]
        },
        node_version: {
          version: "1.2.0",
          changelog: "First",
          dependencies: ["numpy>=1.26", "pillow"],
          supported_os: ["linux", "windows"],
          supported_accelerators: ["cuda"],
          supported_host_version: ">=1.0.0 <2.0.0",
          supported_host_frontend_version: "^1.4.0",
          tags: ["image", "tools"]
        }
      }
    })
  })

  it("a minimal manifest sends only what it has; a license string or {text} is taken as is", () => {
    const minimal = `[project]\nname = "n"\nversion = "0.1.0"\nlicense = "MIT"\n[tool.registry]\npublisher_id = "p"\n`
    expect(Result.getOrThrow(parseManifest(minimal)).request).toEqual({
      node: { id: "n", license: "MIT" },
      node_version: { version: "0.1.0" }
    })
    const text = `[project]\nname = "n"\nversion = "0.1.0"\nlicense = { text = "Apache-2.0" }\n`
    expect(Result.getOrThrow(parseManifest(text, { publisherId: "p" })).request.node?.license).toBe("Apache-2.0")
  })

  it("--publisher overrides publisher_id; a Repository URL wins over Homepage", () => {
    const text = `[project]\nname = "n"\nversion = "1.0.0"\n[project.urls]\nhomepage = "https://h"\nRepository = "https://r"\n[tool.registry]\npublisher_id = "p"\n`
    const manifest = Result.getOrThrow(parseManifest(text, { publisherId: "q" }))
    expect(manifest.publisherId).toBe("q")
    expect(manifest.request.node?.repository).toBe("https://r")
  })

  it("refuses bad manifests with one line naming the key", () => {
    expect(failure("[project\nname=1")).toMatch(/^pyproject\.toml is not valid TOML at line 1/)
    expect(failure(`[tool.registry]\npublisher_id = "p"\n`)).toBe("pyproject.toml: [project] is missing")
    expect(failure(`[project]\nname = "n"\n`, { publisherId: "p" })).toBe("pyproject.toml: [project] version is missing")
    expect(failure(`[project]\nname = "n"\nversion = 1\n`, { publisherId: "p" })).toBe("pyproject.toml: [project] version: Expected string")
    expect(failure(`[project]\nname = "n"\nversion = "1.0.0"\n`)).toBe(
      "pyproject.toml: [tool.registry] publisher_id is missing (or pass --publisher)"
    )
    expect(failure(`[project]\nname = "n"\nversion = "one"\n`, { publisherId: "p" })).toMatch(
      /^pyproject\.toml: \[project\] version: expected a semantic version/
    )
    expect(failure(`[project]\nname = "-bad id"\nversion = "1.0.0"\n`, { publisherId: "p" })).toMatch(
      /^pyproject\.toml: \[project\] name: expected 1 to 100 characters/
    )
    expect(failure(`[project]\nname = "n"\nversion = "1.0.0"\n[tool.registry]\npublisher_id = "p"\nsupported_host_version = "not a range"\n`))
      .toMatch(/^pyproject\.toml: \[tool\.registry\] supported_host_version: expected a version range such as/)
    expect(failure(`[project]\nname = "n"\nversion = "1.0.0"\n[tool.registry]\npublisher_id = "p"\ntag = ["x"]\n`))
      .toMatch(/^pyproject\.toml: \[tool\.registry\] has unknown key tag/)
    expect(failure(`[project]\nname = "n"\nversion = "1.0.0"\n[tool.registry]\npublisher_id = "p"\ntags = "x"\n`))
      .toBe("pyproject.toml: [tool.registry] tags: Expected array | undefined")
    expect(failure(`[project]\nname = "n"\nversion = "1.0.0"\n[tool.registry]\npublisher_id = "p"\nincludes = ["../secrets"]\n`))
      .toMatch(/includes: include \.\.\/secrets leaves the node's directory/)
    expect(failure(`[project]\nname = "n"\nversion = "1.0.0"\n[tool.registry]\npublisher_id = "p"\nincludes = ["/etc/passwd"]\n`))
      .toMatch(/is absolute/)
  })
})
