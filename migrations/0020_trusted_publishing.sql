-- Trusted publishing (issue 28): a CI workflow exchanges its OIDC identity token for a short-lived
-- publish token, so no long-lived secret sits in the repository's settings.

-- A workflow allowed to publish one node of a publisher. The node may not exist yet (its first
-- publish creates it), as PyPI's "pending publishers" allow. Deleting one sets deleted_at: tokens
-- it minted stop working at once, and versions' provenance still names it.
CREATE TABLE trusted_publishers (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  publisher_id      text COLLATE "C" NOT NULL REFERENCES publishers (id) ON DELETE CASCADE,
  node_id           text COLLATE "C" NOT NULL,
  issuer            text NOT NULL,
  -- compared case-insensitively, as the repository hosts treat them
  repository_owner  text NOT NULL,
  repository_name   text NOT NULL,
  -- the workflow file's path in the repository, compared exactly
  workflow          text NOT NULL,
  environment       text,
  ref_pattern       text,
  created_by        text REFERENCES users (id),
  created_at        timestamptz NOT NULL DEFAULT now(),
  deleted_at        timestamptz
);
CREATE INDEX trusted_publishers_node ON trusted_publishers (publisher_id, node_id) WHERE deleted_at IS NULL;
CREATE INDEX trusted_publishers_repository ON trusted_publishers (issuer, lower(repository_owner), lower(repository_name))
  WHERE deleted_at IS NULL;

-- Identity tokens already exchanged, by issuer and `jti`, kept until they expire: each is
-- accepted once.
CREATE TABLE identity_token_uses (
  issuer      text NOT NULL,
  jti         text NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (issuer, jti)
);
CREATE INDEX identity_token_uses_expiry ON identity_token_uses (expires_at);

-- Publish tokens minted by an exchange: the hash of the value (shown once), its expiry, and for
-- each node it may publish, the trusted publisher that matched. The claims that matched become
-- the provenance of what it publishes.
CREATE TABLE publish_tokens (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  token_hash    bytea NOT NULL UNIQUE,
  claims        jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL
);
CREATE INDEX publish_tokens_expiry ON publish_tokens (expires_at);

CREATE TABLE publish_token_scopes (
  token_id              uuid NOT NULL REFERENCES publish_tokens (id) ON DELETE CASCADE,
  trusted_publisher_id  uuid NOT NULL REFERENCES trusted_publishers (id) ON DELETE CASCADE,
  PRIMARY KEY (token_id, trusted_publisher_id)
);

-- How each version was published: a personal access token, a member's bearer token, or trusted
-- publishing with the claims that matched (Domain/Node.ts, Provenance). NULL for versions
-- published before this migration.
ALTER TABLE node_versions ADD COLUMN provenance jsonb;
