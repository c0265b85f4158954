-- The number of listed nodes, kept exact by triggers: the unfiltered GET /nodes answers its
-- `total` from one row instead of counting the catalogue on every request. The triggers run once
-- per statement (over its transition tables), so a bulk write touches the counter once.

CREATE TABLE catalogue_counts (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  listed     bigint NOT NULL
);
INSERT INTO catalogue_counts (listed) SELECT count(*) FROM nodes WHERE listed;

CREATE FUNCTION count_listed_nodes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delta bigint := 0;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE catalogue_counts SET listed = 0;
    RETURN NULL;
  END IF;
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    delta := delta - (SELECT count(*) FROM old_nodes WHERE listed);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    delta := delta + (SELECT count(*) FROM new_nodes WHERE listed);
  END IF;
  IF delta <> 0 THEN
    UPDATE catalogue_counts SET listed = listed + delta;
  END IF;
  RETURN NULL;
END $$;

-- a trigger with transition tables takes one event each
CREATE TRIGGER nodes_count_inserted AFTER INSERT ON nodes
  REFERENCING NEW TABLE AS new_nodes FOR EACH STATEMENT EXECUTE FUNCTION count_listed_nodes();
CREATE TRIGGER nodes_count_updated AFTER UPDATE ON nodes
  REFERENCING OLD TABLE AS old_nodes NEW TABLE AS new_nodes FOR EACH STATEMENT EXECUTE FUNCTION count_listed_nodes();
CREATE TRIGGER nodes_count_deleted AFTER DELETE ON nodes
  REFERENCING OLD TABLE AS old_nodes FOR EACH STATEMENT EXECUTE FUNCTION count_listed_nodes();
CREATE TRIGGER nodes_count_truncated AFTER TRUNCATE ON nodes
  FOR EACH STATEMENT EXECUTE FUNCTION count_listed_nodes();
