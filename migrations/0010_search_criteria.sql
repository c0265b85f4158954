-- Search without free text (GET /nodes/search): `host_node_search` and `repository_url_search`
-- match by substring, case-insensitively, and `include_banned` adds banned nodes for site admins.
-- Substrings are found through trigram indexes (pg_trgm, a contrib extension shipped with
-- PostgreSQL: the embedded server's binaries and Debian's postgresql package both carry it, and it
-- is trusted, so a database owner may create it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- `s` as a LIKE pattern that matches exactly `s`: the escape character and the wildcards escaped.
CREATE FUNCTION like_escape(s text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT replace(replace(replace(s, '\', '\\'), '%', '\%'), '_', '\_') $$;

-- A node's host-node names as one text, one name a line, for the trigram index; a match found in
-- it is confirmed name by name (a pattern could span two lines). `array_to_string` is only stable
-- in general, but immutable for text.
CREATE FUNCTION host_node_names_text(names text[]) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT array_to_string(names, E'\n') $$;

-- A repository URL as searches compare it: lower case, without scheme, user (`git@`), `www.`,
-- `.git` and trailing slashes; the scp-like `host:owner/repo` becomes `host/owner/repo`. So
-- `https://Host/Owner/Repo.git/`, `git@host:owner/repo` and `host/owner/repo` are one key, and a
-- part of a URL is a part of its key.
CREATE FUNCTION repository_key(url text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$
    SELECT regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
      lower(btrim(url)),
      '^[a-z][a-z0-9+.-]*://', ''),
      '^[^/@]*@', ''),
      '^www\.', ''),
      '^([^/:]+):(?![0-9])', '\1/'),
      '(\.git)?/*$', '')
  $$;

CREATE INDEX nodes_host_node_names_trgm ON nodes USING gin (host_node_names_text(host_node_names) gin_trgm_ops);
CREATE INDEX nodes_repository_trgm ON nodes USING gin (repository_key(repository) gin_trgm_ops);

-- The full-text index covered listed nodes only; a site admin's search with include_banned reads
-- banned ones too, so it now covers every node (the deleted and banned are few).
DROP INDEX nodes_search;
CREATE INDEX nodes_search ON nodes USING gin (search_document);
