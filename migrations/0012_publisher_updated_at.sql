-- A publisher's record is part of its nodes' JSON. Its changes used to bump `updated_at` of every
-- node it has (a rename of a publisher with 1,000 nodes wrote 1,000 rows); now the publisher
-- carries its own `updated_at`, and `GET /nodes?timestamp=` reads it beside its nodes' (a node
-- counts as updated when it or its publisher changed after the time). The index serves that
-- lookup: the publishers changed after a time are few.
ALTER TABLE publishers ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
-- until now every change of a publisher was stamped on its nodes: its own stamp starts at creation
UPDATE publishers SET updated_at = created_at;
CREATE INDEX publishers_updated_at ON publishers (updated_at);
