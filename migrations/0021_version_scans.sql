-- Moderation (issue 29): what the scanner found in each uploaded archive, and each version's
-- pipeline (uploaded, checked, scanned, reviewed, listed) as the stages it passed.

-- One row per scan of a version's archive: the rule set that ran and what it found. A version's
-- latest scan is the one that decides; earlier ones stay (a rescan after a rule change adds one).
CREATE TABLE version_scans (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  version_id        uuid NOT NULL REFERENCES node_versions (id) ON DELETE CASCADE,
  rule_set_version  text NOT NULL,
  -- passed: nothing high; held: a high finding holds the version for a review
  outcome           text NOT NULL CHECK (outcome IN ('passed', 'held')),
  -- [{rule, severity, file, line?, excerpt}], at most the scanner's limit
  findings          jsonb NOT NULL,
  -- findings past the limit, counted and not kept
  dropped           integer NOT NULL DEFAULT 0,
  files_scanned     integer NOT NULL,
  scanned_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX version_scans_version ON version_scans (version_id, scanned_at DESC);

-- The stages a version passed, append-only: its pipeline as its publisher and site admins see it.
CREATE TABLE version_events (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  version_id  uuid NOT NULL REFERENCES node_versions (id) ON DELETE CASCADE,
  stage       text NOT NULL CHECK (stage IN ('uploaded', 'checked', 'scanned', 'reviewed', 'listed')),
  outcome     text NOT NULL,
  detail      text,
  at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX version_events_version ON version_events (version_id, id);
