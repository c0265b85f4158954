-- The image vendor's upscalers (creative, precision v2) and relight are tasks like the others:
-- their kinds join the list a task may have.
ALTER TABLE media_tasks DROP CONSTRAINT media_tasks_kind_check;
ALTER TABLE media_tasks ADD CONSTRAINT media_tasks_kind_check CHECK (kind IN (
  'image-style-transfer', 'skin-enhancer', 'image-upscaler', 'image-upscaler-precision-v2', 'image-relight'
));
