-- Retries that are safe (issue 22): a publish whose answer was lost, or an upload whose connection
-- dropped after the commit, is retried with the same content and answered as done, not 409. Each
-- version keeps what decides "the same content".

-- SHA-256 of the publish request's manifest (the decoded node fields and node_version, as
-- canonical JSON; Publishing/Manifest.ts). NULL for versions published before this migration:
-- their republish stays a conflict, since nothing tells its content apart.
ALTER TABLE node_versions ADD COLUMN manifest_sha256 bytea CHECK (octet_length(manifest_sha256) = 32);

-- SHA-256 of the stored archive's bytes, written with archive_bytes and cleared with it.
ALTER TABLE node_versions ADD COLUMN archive_sha256 bytea CHECK (octet_length(archive_sha256) = 32);
