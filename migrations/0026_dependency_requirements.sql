-- Each version's dependencies read as PEP 508 requirements (issue 30), one entry per entry of
-- `dependencies`, in order: the parsed form, or the text with why it is not a requirement. Written
-- when a version is stored. NULL on versions stored before: they are parsed on read where the
-- service needs them (the conflict check reads the text), and answered without the field.
ALTER TABLE node_versions ADD COLUMN dependency_requirements jsonb;
