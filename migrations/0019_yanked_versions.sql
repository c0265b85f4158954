-- Yanked versions (PEP 592, cargo yank): still installable by their exact number, never a node's
-- latest version nor an unpinned install's choice. A flag beside the status, not a status: the
-- interface's status enumeration does not change. The reason is present exactly while yanked.
ALTER TABLE node_versions
  ADD COLUMN yanked boolean NOT NULL DEFAULT false,
  ADD COLUMN yanked_reason text,
  ADD CONSTRAINT node_versions_yanked_reason CHECK (yanked = (yanked_reason IS NOT NULL));
