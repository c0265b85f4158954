-- The number of listed nodes, kept exact by a trigger: the unfiltered GET /nodes answers its
-- `total` from one row instead of counting the catalogue on every request.

CREATE TABLE catalogue_counts (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  listed     bigint NOT NULL
);
INSERT INTO catalogue_counts (listed) SELECT count(*) FROM nodes WHERE listed;

CREATE FUNCTION count_listed_nodes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delta bigint := 0;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.listed THEN delta := delta - 1; END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.listed THEN delta := delta + 1; END IF;
  IF delta <> 0 THEN
    UPDATE catalogue_counts SET listed = listed + delta;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER nodes_count_listed
  AFTER INSERT OR DELETE OR UPDATE OF listed ON nodes
  FOR EACH ROW EXECUTE FUNCTION count_listed_nodes();
