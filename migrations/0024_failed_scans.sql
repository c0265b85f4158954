-- A scan that did not finish (its thread took too long or stopped) is recorded as such (issue 29):
-- the version is held while a job retries the scan, and its publisher sees why.
ALTER TABLE version_scans DROP CONSTRAINT version_scans_outcome_check;
ALTER TABLE version_scans ADD CONSTRAINT version_scans_outcome_check CHECK (outcome IN ('passed', 'held', 'failed'));
-- why a failed scan did not finish; NULL for the others
ALTER TABLE version_scans ADD COLUMN failure text;
