-- The media type read from a file's first bytes when its creation declared none (or
-- application/octet-stream): the file is served as this one. Kept apart from content_type, the
-- declared type, which an upload's Content-Type must still match, so that uploading other bytes
-- again sniffs again.
ALTER TABLE media_files ADD COLUMN sniffed_type text;
