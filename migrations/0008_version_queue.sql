-- Indexes of the reads across nodes (issue 11): the moderation queue `GET /versions` (newest
-- first), and the host-node lookups by name (`GET /host-nodes`, `GET /host-nodes/{name}/node`).

-- the queue's order; site admins' unfiltered pages walk it
CREATE INDEX node_versions_queue ON node_versions (created_at DESC, id);
-- the queue filtered by status (the public's active versions, the moderators' pending ones)
CREATE INDEX node_versions_queue_status ON node_versions (status, created_at DESC, id);
-- names compare byte-wise (COLLATE "C") whatever the database's locale, as the listing sorts them
CREATE INDEX host_nodes_name ON host_nodes (host_node_name COLLATE "C");
