-- The change feed (issue 30): every change to a node or a version, written by triggers in the
-- writing transaction, so that no write path can forget it. Transactions commit out of order,
-- and one may act on what another committed before it though it began first: the feed's order is
-- the order of commits. At its commit, a transaction takes the feed's lock and numbers its
-- changes (`seq`, one number per transaction, from a sequence); the lock is released only once the
-- commit is visible. So the numbers become visible in order, with no gap a later commit could
-- fill: a follower that reads `(seq, id)` after its cursor never misses a change, nor sees one
-- twice, and sees each row's changes in the order they were made. A deferred constraint trigger
-- runs at commit; nothing in this schema is deferred besides it, so it is the last thing a
-- transaction does and waits on nothing but the lock.
CREATE SEQUENCE catalogue_changes_seq;

CREATE TABLE catalogue_changes (
  -- the writing transaction's number in commit order; NULL until it commits
  seq      bigint,
  id       bigint GENERATED ALWAYS AS IDENTITY,
  xid      xid8 NOT NULL DEFAULT pg_current_xact_id(),
  -- node_created, node_changed, node_deleted, version_published, version_changed,
  -- version_status_changed, version_yanked, version_unyanked, version_deleted
  kind     text NOT NULL,
  node_id  text COLLATE "C" NOT NULL,
  version  text,
  -- the node's or the version's status after the change
  status   text,
  -- nodes: whether the node appears in public listings after the change
  listed   boolean,
  -- versions: whether it is yanked after the change
  yanked   boolean,
  at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (id)
);
CREATE UNIQUE INDEX catalogue_changes_order ON catalogue_changes (seq, id) WHERE seq IS NOT NULL;
CREATE INDEX catalogue_changes_unnumbered ON catalogue_changes (xid) WHERE seq IS NULL;

-- Where pruning (CHANGE_FEED_RETENTION_DAYS) reached: a cursor before it is too old (410).
CREATE TABLE catalogue_changes_pruned (
  only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  seq       bigint NOT NULL,
  id        bigint NOT NULL
);

-- At commit: the feed's lock (held until the commit is visible), then one number for all the
-- transaction's changes. The first call numbers them; the others find nothing left.
CREATE FUNCTION number_catalogue_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  number bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM catalogue_changes WHERE xid = pg_current_xact_id() AND seq IS NULL) THEN
    PERFORM pg_advisory_xact_lock(hashtext('catalogue_changes'));
    number := nextval('catalogue_changes_seq');
    UPDATE catalogue_changes SET seq = number WHERE xid = pg_current_xact_id() AND seq IS NULL;
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER catalogue_changes_numbered AFTER INSERT ON catalogue_changes
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION number_catalogue_changes();

CREATE FUNCTION record_node_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO catalogue_changes (kind, node_id, status, listed) VALUES ('node_created', NEW.id, NEW.status, NEW.listed);
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO catalogue_changes (kind, node_id, status, listed) VALUES ('node_deleted', OLD.id, 'NodeStatusDeleted', false);
  -- counters and derived columns are not changes a follower acts on (downloads move with every install)
  ELSIF (to_jsonb(NEW) - '{downloads,updated_at,search_document}'::text[])
        IS DISTINCT FROM (to_jsonb(OLD) - '{downloads,updated_at,search_document}'::text[]) THEN
    INSERT INTO catalogue_changes (kind, node_id, status, listed)
    VALUES (CASE WHEN NEW.status = 'NodeStatusDeleted' AND OLD.status <> 'NodeStatusDeleted' THEN 'node_deleted' ELSE 'node_changed' END,
            NEW.id, NEW.status, NEW.listed);
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION record_version_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO catalogue_changes (kind, node_id, version, status, yanked) VALUES ('version_published', NEW.node_id, NEW.version, NEW.status, NEW.yanked);
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO catalogue_changes (kind, node_id, version, status, yanked) VALUES ('version_deleted', OLD.node_id, OLD.version, 'NodeVersionStatusDeleted', OLD.yanked);
  ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
    INSERT INTO catalogue_changes (kind, node_id, version, status, yanked) VALUES ('version_status_changed', NEW.node_id, NEW.version, NEW.status, NEW.yanked);
  ELSIF NEW.yanked IS DISTINCT FROM OLD.yanked THEN
    INSERT INTO catalogue_changes (kind, node_id, version, status, yanked)
    VALUES (CASE WHEN NEW.yanked THEN 'version_yanked' ELSE 'version_unyanked' END, NEW.node_id, NEW.version, NEW.status, NEW.yanked);
  -- the extraction of host-node names and the parse of the dependencies (a backfill writes it for
  -- every version) are the registry's bookkeeping, not the publisher's change
  ELSIF (to_jsonb(NEW) - '{host_node_extract_status,dependency_requirements}'::text[])
        IS DISTINCT FROM (to_jsonb(OLD) - '{host_node_extract_status,dependency_requirements}'::text[]) THEN
    INSERT INTO catalogue_changes (kind, node_id, version, status, yanked) VALUES ('version_changed', NEW.node_id, NEW.version, NEW.status, NEW.yanked);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER nodes_changes AFTER INSERT OR DELETE ON nodes
  FOR EACH ROW EXECUTE FUNCTION record_node_change();
-- an install's counting (downloads alone) is the hottest write: skipped before the function runs
CREATE TRIGGER nodes_updates AFTER UPDATE ON nodes
  FOR EACH ROW WHEN (OLD.downloads IS NOT DISTINCT FROM NEW.downloads) EXECUTE FUNCTION record_node_change();
CREATE TRIGGER node_versions_changes AFTER INSERT OR UPDATE OR DELETE ON node_versions
  FOR EACH ROW EXECUTE FUNCTION record_version_change();
