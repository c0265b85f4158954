-- The review of held versions (issue 29): the thread between a version's publisher and the site
-- admins, the publisher's requests for a review, and the log of every moderation decision.

CREATE TABLE version_review_messages (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  version_id      uuid NOT NULL REFERENCES node_versions (id) ON DELETE CASCADE,
  author_id       text NOT NULL,
  -- written by a site admin (else by a member of the version's publisher)
  from_site_admin boolean NOT NULL,
  body            text NOT NULL CHECK (char_length(body) BETWEEN 1 AND 5000),
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX version_review_messages_version ON version_review_messages (version_id, id);

-- A review asked for, once per uploaded archive (by its digest): a new upload may ask again.
CREATE TABLE version_review_requests (
  version_id      uuid NOT NULL REFERENCES node_versions (id) ON DELETE CASCADE,
  archive_sha256  bytea NOT NULL,
  requested_by    text NOT NULL,
  requested_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (version_id, archive_sha256)
);

-- Every moderation decision: who, when, what, on which version, and why. Append-only.
CREATE TABLE moderation_audit_log (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  actor_id    text NOT NULL,
  action      text NOT NULL,
  node_id     text NOT NULL,
  version     text,
  version_id  uuid,
  reason      text,
  at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX moderation_audit_log_at ON moderation_audit_log (at DESC, id DESC);
