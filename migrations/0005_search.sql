-- Full-text search over the catalogue (GET /nodes/search). Each node carries a weighted
-- `search_document`, kept current by triggers: id and name weigh A, tags and host-node names B,
-- author C, description D. Identifiers are indexed with the 'simple' configuration (no stemming,
-- no stop words); the description also with 'english', so that a singular finds a plural.

-- Text as the search sees it, in documents and queries alike: identifier separators between
-- letters or digits become spaces, so that `comfyui-impact-pack`, `impact_pack` and `impact.pack`
-- are all found by `impact` (a leading `-` is left alone: in a query it negates).
CREATE FUNCTION search_text(text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT regexp_replace($1, '([[:alnum:]])[-_./]+(?=[[:alnum:]])', '\1 ', 'g') $$;

-- An identifier-like field: its words, then the parts of its camel-case words (`KSamplerAdvanced`
-- is found as itself and by `sampler`).
CREATE FUNCTION search_words(text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$
    SELECT coalesce(t || ' ' || (
      SELECT string_agg(regexp_replace(w, '([[:lower:][:digit:]])([[:upper:]])|([[:upper:]])([[:upper:]][[:lower:]])', '\1\3 \2\4', 'g'), ' ')
      FROM regexp_split_to_table(t, '\s+') AS w
      WHERE w ~ '[[:lower:][:digit:]][[:upper:]]|[[:upper:]][[:upper:]][[:lower:]]'), t)
    FROM (SELECT search_text($1) AS t) s
  $$;

CREATE FUNCTION node_search_document(
  id text, name text, tags text[], host_node_names text[], author text, description text
) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$
    SELECT setweight(to_tsvector('simple', search_words(id) || ' ' || coalesce(search_words(name), '')), 'A')
      || setweight(to_tsvector('simple', coalesce(search_words(array_to_string(tags, ' ')), '') || ' '
                                         || coalesce(search_words(array_to_string(host_node_names, ' ')), '')), 'B')
      || setweight(to_tsvector('simple', coalesce(search_text(author), '')), 'C')
      || setweight(to_tsvector('english', coalesce(search_text(description), ''))
                   || to_tsvector('simple', coalesce(search_text(description), '')), 'D')
  $$;

-- A query as typed (websearch syntax: words, "phrases", or, -negation); with `prefix`, its last
-- word also matches longer words (typing `imag` finds `image-tools`). Never fails: text that is
-- no query at all matches nothing.
CREATE FUNCTION node_search_query(q text, prefix boolean) RETURNS tsquery
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$
    SELECT CASE WHEN prefix THEN regexp_replace(w::text, '''$', ''':*')::tsquery ELSE w END
    FROM (SELECT websearch_to_tsquery('simple', search_text(q)) AS w) s
  $$;

-- the host-node names of a node's versions (deleted versions excluded), kept by the triggers below
ALTER TABLE nodes ADD COLUMN host_node_names text[] NOT NULL DEFAULT '{}';
ALTER TABLE nodes ADD COLUMN search_document tsvector;

CREATE FUNCTION nodes_search_document() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.search_document := node_search_document(NEW.id, NEW.name, NEW.tags, NEW.host_node_names, NEW.author, NEW.description);
  RETURN NEW;
END $$;

CREATE TRIGGER nodes_search_document BEFORE INSERT OR UPDATE OF id, name, tags, host_node_names, author, description
  ON nodes FOR EACH ROW EXECUTE FUNCTION nodes_search_document();

-- Recomputes host_node_names of the given nodes; a row is written only when its names changed.
CREATE FUNCTION refresh_host_node_names(node_ids text[]) RETURNS void LANGUAGE sql AS $$
  UPDATE nodes n SET host_node_names = names.names
  FROM (SELECT i.id, coalesce((
          SELECT array_agg(DISTINCT h.host_node_name ORDER BY h.host_node_name)
          FROM node_versions v JOIN host_nodes h ON h.version_id = v.id
          WHERE v.node_id = i.id AND v.status <> 'NodeVersionStatusDeleted'), '{}') AS names
        FROM unnest(node_ids) AS i(id)) names
  WHERE n.id = names.id AND n.host_node_names IS DISTINCT FROM names.names
$$;

-- Statement triggers over transition tables: a bulk record of 5,000 host-nodes recomputes its
-- node once, not 5,000 times.
CREATE FUNCTION host_nodes_search_names() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    PERFORM refresh_host_node_names(ARRAY(
      SELECT DISTINCT v.node_id FROM new_rows r JOIN node_versions v ON v.id = r.version_id));
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    PERFORM refresh_host_node_names(ARRAY(
      SELECT DISTINCT v.node_id FROM old_rows r JOIN node_versions v ON v.id = r.version_id));
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER host_nodes_search_inserted AFTER INSERT ON host_nodes
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION host_nodes_search_names();
CREATE TRIGGER host_nodes_search_updated AFTER UPDATE ON host_nodes
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION host_nodes_search_names();
CREATE TRIGGER host_nodes_search_deleted AFTER DELETE ON host_nodes
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION host_nodes_search_names();

-- a version deleted (or restored) takes its host-node names out of (or back into) its node's document
CREATE FUNCTION node_versions_search_names() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM refresh_host_node_names(ARRAY(
    SELECT DISTINCT n.node_id FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE (n.status = 'NodeVersionStatusDeleted') <> (o.status = 'NodeVersionStatusDeleted')));
  RETURN NULL;
END $$;

CREATE TRIGGER node_versions_search_names AFTER UPDATE ON node_versions
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION node_versions_search_names();

-- the catalogue as it stands
SELECT refresh_host_node_names(ARRAY(SELECT DISTINCT v.node_id FROM host_nodes h JOIN node_versions v ON v.id = h.version_id));
UPDATE nodes SET search_document = node_search_document(id, name, tags, host_node_names, author, description);

CREATE INDEX nodes_search ON nodes USING gin (search_document) WHERE listed;
