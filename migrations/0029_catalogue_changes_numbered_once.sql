-- The change feed's numbering at commit (0027) asked, once for each change of the transaction,
-- whether any of its changes was still unnumbered. The planner answers that from the partial
-- index of unnumbered changes, which keeps an entry for every change numbered since the last
-- vacuum: after the first call had numbered them all, each later one walked them all again. A
-- transaction of n changes took time in n²: setting the archive of 6,000 versions took 4-5 s
-- (0.8 s without the feed), of 78,000 more than ten minutes. Each call now reads its own change by
-- its key, and numbers the transaction's changes only when that one is not numbered yet.
CREATE OR REPLACE FUNCTION number_catalogue_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  numbered bigint;
  number bigint;
BEGIN
  SELECT seq INTO numbered FROM catalogue_changes WHERE id = NEW.id;
  IF FOUND AND numbered IS NULL THEN
    PERFORM pg_advisory_xact_lock(hashtext('catalogue_changes'));
    number := nextval('catalogue_changes_seq');
    UPDATE catalogue_changes SET seq = number WHERE xid = pg_current_xact_id() AND seq IS NULL;
  END IF;
  RETURN NULL;
END $$;
