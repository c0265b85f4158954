-- Each version's dependencies read as PEP 508 requirements (issue 30), one entry per entry of
-- `dependencies`, in order: the parsed form, or the text with why it is not a requirement. Written
-- when a version is stored. NULL on versions stored before, until the dependency-parse-backfill
-- job (src/Publishing/DependencyBackfill.ts) parses them after start-up: the parser is the
-- service's TypeScript, which SQL cannot run. Such versions are answered without the field.
ALTER TABLE node_versions ADD COLUMN dependency_requirements jsonb;
