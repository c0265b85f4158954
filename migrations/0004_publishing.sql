-- Publishing: archives of node versions, and the key that signs their upload URLs.

-- the size of the version's stored archive; NULL while none has been uploaded
ALTER TABLE node_versions ADD COLUMN archive_bytes bigint;

-- Secrets the service generates itself and every instance on this database must share (the
-- signing key of upload URLs when STORAGE_SIGNING_SECRET is unset). The first instance to start
-- inserts one; the others read it.
CREATE TABLE service_secrets (
  name        text PRIMARY KEY,
  value       text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
