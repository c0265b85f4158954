-- User API keys (the X-API-KEY header of the media proxy and media storage), and the media files
-- uploaded for the API nodes.

-- A key is shown once, when it is created: the table keeps its SHA-256 (to recognise it, one
-- index lookup) and a hint (to tell keys apart in listings), never the value.
CREATE TABLE api_keys (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name         text NOT NULL,
  description  text,
  key_hash     bytea NOT NULL UNIQUE,
  key_hint     text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_id, created_at) WHERE revoked_at IS NULL;

-- A file exists from its creation (POST /customers/storage) and has bytes once uploaded; it is
-- deleted, row and bytes, when it expires.
CREATE TABLE media_files (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  owner_id        text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  -- the secret part of both URLs (256 random bits)
  token           text NOT NULL UNIQUE,
  file_name       text NOT NULL,
  content_type    text NOT NULL,
  -- SHA-256 of the stored bytes (hex), computed while they streamed in; with size, set by the upload
  sha256          text,
  size_bytes      bigint,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL
);
-- a user's live files (the per-user limit, a repeated upload by hash) and the sweep
CREATE INDEX media_files_owner ON media_files (owner_id, expires_at);
CREATE INDEX media_files_expiry ON media_files (expires_at);
