-- Downloads are counted once per client address, node and version per hour (issue 12): an
-- install inserts its row here and adds a download only when the row is new, in one statement,
-- so that every instance on this database agrees. The address is kept as a keyed SHA-256 (the
-- key below), never as itself: IPv4 addresses are few enough to reverse an unkeyed hash. Rows of
-- past hours are pruned by the service.
CREATE TABLE install_counts (
  address_hash  bytea NOT NULL,
  node_id       text NOT NULL,
  version       text NOT NULL,
  hour          timestamptz NOT NULL,
  PRIMARY KEY (hour, address_hash, node_id, version)
);

-- The key of the address hashes, shared by every instance: two v4 UUIDs, 244 random bits from
-- PostgreSQL's strong random source.
INSERT INTO service_secrets (name, value)
  VALUES ('install_address_key', gen_random_uuid()::text || gen_random_uuid()::text)
  ON CONFLICT (name) DO NOTHING;
