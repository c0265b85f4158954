-- Download statistics (issue 30, item 5): installs counted per node, version and UTC day. An
-- install still inserts its row into install_counts (one per client address, node, version and
-- hour: the dedupe of migration 0011) and adds one to nodes.downloads. A durable job of the job
-- runner (src/Downloads/Rollup.ts) folds the rows of completed hours into this table and deletes
-- them, in one statement, so no install is counted twice or lost; reads add the rows it has not
-- folded yet, so the figures are exact at any moment.
CREATE TABLE download_days (
  node_id    text NOT NULL,
  version    text NOT NULL,
  day        date NOT NULL,
  downloads  bigint NOT NULL CHECK (downloads > 0),
  PRIMARY KEY (node_id, day, version)
);

-- the reads of the rows not yet folded: one node's, over a range of hours
CREATE INDEX install_counts_node_hour ON install_counts (node_id, hour);
