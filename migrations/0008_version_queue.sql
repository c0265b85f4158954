-- Indexes of the reads across nodes (issue 11): the moderation queue `GET /versions` (newest
-- first).

-- the queue's order; site admins' unfiltered pages walk it
CREATE INDEX node_versions_queue ON node_versions (created_at DESC, id);
-- the queue filtered by status (the public's active versions, the moderators' pending ones)
CREATE INDEX node_versions_queue_status ON node_versions (status, created_at DESC, id);
