-- Webhooks through the proxy (issue 27): the vendor calls this service back at a URL bound to one
-- task; the client's own webhook_url receives our payload, signed, through a durable job
-- (graphile-worker, whose schema its own migrator keeps: src/Jobs/Runner.ts).

-- SHA-256 of the task's callback token (the URL the vendor was given ends with the token itself,
-- which is never stored); NULL for tasks started before this migration.
ALTER TABLE media_tasks ADD COLUMN callback_token_hash bytea UNIQUE CHECK (octet_length(callback_token_hash) = 32);
-- The client's webhook_url, never given to the vendor.
ALTER TABLE media_tasks ADD COLUMN webhook_url text;

-- One Standard Webhooks secret per user (keyed by the user id, not by a customer record), made on
-- first need. After a rotation the previous secret also signs until previous_until, so that a
-- receiver that has not yet taken the new one still verifies deliveries.
CREATE TABLE webhook_secrets (
  owner_id         text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  secret           bytea NOT NULL CHECK (octet_length(secret) = 32),
  previous_secret  bytea CHECK (octet_length(previous_secret) = 32),
  previous_until   timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  rotated_at       timestamptz
);

-- One message to a client's webhook_url: its payload is fixed when it is made, so that every
-- attempt sends the same bytes under the same webhook-id.
CREATE TABLE webhook_deliveries (
  id               uuid PRIMARY KEY,
  owner_id         text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  task_id          uuid NOT NULL REFERENCES media_tasks (id) ON DELETE CASCADE,
  event_type       text NOT NULL,
  target_url       text NOT NULL,
  payload          text NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  finished_at      timestamptz
);
CREATE INDEX webhook_deliveries_owner ON webhook_deliveries (owner_id, created_at DESC, id);
-- a task finishes once, so it is announced once per event type
CREATE UNIQUE INDEX webhook_deliveries_event ON webhook_deliveries (task_id, event_type);

-- Every attempt of a delivery: when, how it ended (an HTTP status, or why none), how long it took.
CREATE TABLE webhook_attempts (
  delivery_id   uuid NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt       integer NOT NULL,
  attempted_at  timestamptz NOT NULL,
  status_code   integer,
  error         text,
  duration_ms   integer NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);
