-- A node's held version (its newest, Flagged by a scan) is shown with the node (issue 29): every
-- node read looks for its flagged versions, which this finds without reading its other versions.
CREATE INDEX node_versions_flagged ON node_versions (node_id) WHERE status = 'NodeVersionStatusFlagged';
