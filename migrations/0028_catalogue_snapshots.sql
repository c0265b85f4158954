-- The catalogue snapshot (issue 30): every listed node with its latest version, as GET /nodes
-- answers them, cut at a change-feed cursor and stored compressed, so that every instance serves
-- the same bytes for the same cursor. A job builds one after changes (Sync/Snapshot.ts); the
-- newest two are kept, so that an instance still serving the older finishes what it began.
CREATE TABLE catalogue_snapshots (
  cursor        text PRIMARY KEY,
  built_at      timestamptz NOT NULL DEFAULT now(),
  nodes         integer NOT NULL,
  -- the JSON's size uncompressed, and in each coding
  bytes         bigint NOT NULL,
  gzip_bytes    bigint NOT NULL,
  br_bytes      bigint NOT NULL,
  build_millis  integer NOT NULL
);
CREATE INDEX catalogue_snapshots_built_at ON catalogue_snapshots (built_at DESC);

-- A snapshot's coded bytes in parts: the client's protocol reads a row at most 16 MiB long, and
-- 100,000 nodes take more than that even compressed.
CREATE TABLE catalogue_snapshot_parts (
  cursor  text NOT NULL REFERENCES catalogue_snapshots (cursor) ON DELETE CASCADE,
  coding  text NOT NULL CHECK (coding IN ('gzip', 'br')),
  part    integer NOT NULL,
  bytes   bytea NOT NULL,
  PRIMARY KEY (cursor, coding, part)
);
