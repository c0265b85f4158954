-- Image tasks started through the proxy, and the Idempotency-Key claims of their POSTs.

-- The order of media task statuses: a stored status only ever moves to a higher rank
-- (CREATED -> IN_PROGRESS -> COMPLETED | FAILED), and the terminal ones never move.
CREATE FUNCTION media_status_rank(text) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT CASE $1 WHEN 'CREATED' THEN 0 WHEN 'IN_PROGRESS' THEN 1 WHEN 'COMPLETED' THEN 2 WHEN 'FAILED' THEN 2 END $$;

CREATE TABLE media_tasks (
  -- the task_id clients see: the vendor's own id when it is a UUID, else one minted here
  id              uuid PRIMARY KEY,
  vendor_task_id  text NOT NULL,
  owner_id        text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind            text NOT NULL CHECK (kind IN ('image-style-transfer', 'skin-enhancer')),
  status          text NOT NULL CHECK (status IN ('CREATED', 'IN_PROGRESS', 'COMPLETED', 'FAILED')),
  generated       text[] NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX media_tasks_owner ON media_tasks (owner_id, created_at);

-- One row per (user, endpoint, key) for 24 hours: claimed before the vendor is called, bound to
-- the task once it exists, deleted again when the vendor call fails.
CREATE TABLE media_idempotency_keys (
  owner_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind          text NOT NULL,
  key           text NOT NULL,
  -- SHA-256 of the request's canonical JSON (after defaults): the same key with another body is refused
  request_hash  bytea NOT NULL,
  task_id       uuid REFERENCES media_tasks (id) ON DELETE CASCADE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (owner_id, kind, key)
);
CREATE INDEX media_idempotency_keys_age ON media_idempotency_keys (owner_id, created_at);
