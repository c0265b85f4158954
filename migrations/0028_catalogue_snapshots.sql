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

-- The snapshot's nodes, each rendered as GET /nodes renders it, current to `cursor` below: a build
-- renders again only the nodes the feed names since then, and everything at most every
-- `full_every` (download counts and a publisher's name are not changes of the feed).
CREATE TABLE catalogue_snapshot_nodes (
  node_id  text COLLATE "C" PRIMARY KEY,
  json     text NOT NULL
);
CREATE TABLE catalogue_snapshot_state (
  only_row     boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  -- the feed's cursor the rendered nodes are current to
  cursor       text NOT NULL,
  -- when every node was last rendered
  rendered_at  timestamptz NOT NULL
);
