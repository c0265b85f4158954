/**
 * What a verified identity token says about the CI run that holds it, and which trusted
 * publishers it matches. Pure: the exchange (Service.ts) verifies the token first, and the
 * property tests (test/TrustedPublishing/Claims.fast.test.ts) drive these directly.
 *
 * Two shapes of claims are read. GitHub Actions: `repository` ("owner/name"), `workflow_ref`
 * ("owner/name/.github/workflows/publish.yml@refs/tags/v1"), `ref`, `sha`, `run_id`,
 * `environment`. GitLab CI/CD: `project_path` ("group/sub/project"), `ci_config_ref_uri`
 * ("gitlab.example/group/project//.gitlab-ci.yml@refs/heads/main"), `ref_path`, `sha`,
 * `pipeline_id`, `environment`. Any issuer whose tokens have one of these shapes can be trusted.
 */

/** Why a token is refused: the claim that did not hold (or `signature`, `token`), and a sentence. */
export interface Refusal {
  readonly claim: string
  readonly reason: string
}

/** The CI run an identity token speaks for, with the names its issuer gives the claims. */
export interface WorkflowRun {
  readonly repositoryOwner: string
  readonly repositoryName: string
  /** The workflow file's path in the repository. */
  readonly workflow: string
  readonly ref: string | undefined
  readonly sha: string | undefined
  readonly runId: string | undefined
  readonly environment: string | undefined
  /** The claims each part came from, for refusals. */
  readonly claims: { readonly repository: string; readonly workflow: string; readonly ref: string }
}

/** A trusted publisher as matching needs it. */
export interface Rule {
  readonly repository_owner: string
  readonly repository_name: string
  readonly workflow: string
  readonly environment?: string | undefined
  readonly ref_pattern?: string | undefined
}

const text = (value: unknown): string | undefined => typeof value === "string" && value !== "" ? value : undefined

/** A number or a string claim as text (GitLab's ids are strings, some issuers send numbers). */
const idText = (value: unknown): string | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) ? String(value) : text(value)

/** `owner/name` split at its last slash (a GitLab group path holds slashes of its own). */
const splitRepository = (path: string): { owner: string; name: string } | undefined => {
  const at = path.lastIndexOf("/")
  return at <= 0 || at === path.length - 1 ? undefined : { owner: path.slice(0, at), name: path.slice(at + 1) }
}

/** `<prefix><path>@<ref>` → path, when the text has that form. */
const pathBetween = (value: string, prefix: string): string | undefined => {
  if (!value.toLowerCase().startsWith(prefix.toLowerCase())) return undefined
  const rest = value.slice(prefix.length)
  const at = rest.lastIndexOf("@")
  const path = at < 0 ? rest : rest.slice(0, at)
  return path === "" ? undefined : path
}

/** The run a verified token's claims describe, or why they describe none. */
export const runOf = (claims: Readonly<Record<string, unknown>>): { readonly run: WorkflowRun } | { readonly refusal: Refusal } => {
  const github = text(claims.repository)
  if (github !== undefined || text(claims.workflow_ref) !== undefined) {
    const repository = github === undefined ? undefined : splitRepository(github)
    if (repository === undefined) return { refusal: { claim: "repository", reason: "The token's repository claim is not owner/name" } }
    const workflowRef = text(claims.workflow_ref)
    const workflow = workflowRef === undefined ? undefined : pathBetween(workflowRef, `${github}/`)
    if (workflow === undefined) {
      return { refusal: { claim: "workflow_ref", reason: "The token's workflow_ref claim does not name a workflow file of its repository" } }
    }
    return {
      run: {
        repositoryOwner: repository.owner,
        repositoryName: repository.name,
        workflow,
        ref: text(claims.ref),
        sha: text(claims.sha),
        runId: idText(claims.run_id),
        environment: text(claims.environment),
        claims: { repository: "repository", workflow: "workflow_ref", ref: "ref" }
      }
    }
  }
  const gitlab = text(claims.project_path)
  if (gitlab !== undefined) {
    const repository = splitRepository(gitlab)
    if (repository === undefined) return { refusal: { claim: "project_path", reason: "The token's project_path claim is not group/project" } }
    const config = text(claims.ci_config_ref_uri)
    const marker = config?.indexOf(`/${gitlab}//`) ?? -1
    const workflow = config === undefined || marker < 0 ? undefined : pathBetween(config.slice(marker), `/${gitlab}//`)
    if (workflow === undefined) {
      return { refusal: { claim: "ci_config_ref_uri", reason: "The token's ci_config_ref_uri claim does not name a CI file of its project" } }
    }
    return {
      run: {
        repositoryOwner: repository.owner,
        repositoryName: repository.name,
        workflow,
        ref: text(claims.ref_path),
        sha: text(claims.sha),
        runId: idText(claims.pipeline_id),
        environment: text(claims.environment),
        claims: { repository: "project_path", workflow: "ci_config_ref_uri", ref: "ref_path" }
      }
    }
  }
  return {
    refusal: {
      claim: "repository",
      reason: "The token names no repository: it has neither GitHub Actions' repository and workflow_ref claims nor GitLab's project_path and ci_config_ref_uri"
    }
  }
}

/** Whether `ref` matches `pattern`: the whole ref, each `*` standing for any characters (none included). */
export const refMatches = (pattern: string, ref: string): boolean => {
  const parts = pattern.split("*")
  if (parts.length === 1) return pattern === ref
  const first = parts[0]!
  const last = parts[parts.length - 1]!
  if (ref.length < first.length + last.length || !ref.startsWith(first) || !ref.endsWith(last)) return false
  let at = first.length
  const end = ref.length - last.length
  for (const part of parts.slice(1, -1)) {
    const found = ref.indexOf(part, at)
    if (found < 0 || found + part.length > end) return false
    at = found + part.length
  }
  return true
}

/** Whether the run's workflow file is the rule's: the same path, or a path ending in `/` and the rule's. */
export const workflowMatches = (rule: string, workflow: string): boolean => workflow === rule || workflow.endsWith(`/${rule}`)

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/** How far a rule gets with the run: each step a claim that holds, in the order refusals name them. */
const steps = ["repository", "workflow", "environment", "ref"] as const
type Step = typeof steps[number]

/** The first part of `rule` the run does not satisfy, or `undefined` when the rule matches. */
export const firstMismatch = (rule: Rule, run: WorkflowRun): Step | undefined => {
  if (!same(rule.repository_owner, run.repositoryOwner) || !same(rule.repository_name, run.repositoryName)) return "repository"
  if (!workflowMatches(rule.workflow, run.workflow)) return "workflow"
  if (rule.environment !== undefined && (run.environment === undefined || !same(rule.environment, run.environment))) return "environment"
  if (rule.ref_pattern !== undefined && (run.ref === undefined || !refMatches(rule.ref_pattern, run.ref))) return "ref"
  return undefined
}

/**
 * The rules the run matches; when none does, the refusal names the claim at which the rule that
 * got furthest stopped (a workflow's token for an unregistered repository is refused at
 * `repository`, a registered repository's other workflow at `workflow_ref`).
 */
export const matching = <R extends Rule>(rules: ReadonlyArray<R>, run: WorkflowRun): { readonly matched: ReadonlyArray<R> } | { readonly refusal: Refusal } => {
  const matched = rules.filter((rule) => firstMismatch(rule, run) === undefined)
  if (matched.length > 0) return { matched }
  const furthest = rules.reduce<Step>((best, rule) => {
    const stop = firstMismatch(rule, run)!
    return steps.indexOf(stop) > steps.indexOf(best) ? stop : best
  }, "repository")
  const repository = `${run.repositoryOwner}/${run.repositoryName}`
  switch (furthest) {
    case "repository":
      return { refusal: { claim: run.claims.repository, reason: `No trusted publisher is registered for repository '${repository}' and this issuer` } }
    case "workflow":
      return {
        refusal: {
          claim: run.claims.workflow,
          reason: `No trusted publisher of repository '${repository}' allows workflow '${run.workflow}'`
        }
      }
    case "environment":
      return {
        refusal: {
          claim: "environment",
          reason: run.environment === undefined
            ? `The trusted publishers of '${repository}' need a deployment environment: the job ran in none`
            : `No trusted publisher of '${repository}' allows environment '${run.environment}'`
        }
      }
    case "ref":
      return {
        refusal: {
          claim: run.claims.ref,
          reason: run.ref === undefined
            ? `The trusted publishers of '${repository}' need a git ref: the token names none`
            : `No trusted publisher of '${repository}' allows ref '${run.ref}'`
        }
      }
  }
}
