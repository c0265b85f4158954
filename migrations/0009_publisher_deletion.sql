-- Deleting a publisher (DELETE /publishers/{publisherId}) is soft: the row stays, so that its
-- deleted nodes keep their versions and archives, its revoked tokens their records, and its id
-- stays taken (nobody else can take the name of nodes that were published under it).
ALTER TABLE publishers ADD COLUMN deleted_at timestamptz;

-- A node that is not deleted never belongs to a deleted publisher, whichever write gets there:
-- creating or publishing a node, claiming it, restoring it. The publisher's row is locked FOR KEY
-- SHARE, the lock a foreign key check takes, so a delete (which locks the row FOR UPDATE, then
-- counts the publisher's nodes) and a node write serialise: either the delete sees the node and
-- refuses, or the node write waits for the delete, sees `deleted_at` and fails (SQLSTATE 23503).
CREATE FUNCTION refuse_node_of_deleted_publisher() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM publishers WHERE id = NEW.publisher_id AND deleted_at IS NULL FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'publisher % does not exist or is deleted', NEW.publisher_id
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER nodes_of_live_publishers BEFORE INSERT OR UPDATE OF publisher_id, status ON nodes
  FOR EACH ROW WHEN (NEW.status <> 'NodeStatusDeleted') EXECUTE FUNCTION refuse_node_of_deleted_publisher();
