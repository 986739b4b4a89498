-- files_left: files a pass listed in incoming and left there (it could not
-- archive, delete, quarantine or read them); oldest_left: the oldest such
-- file's mtime (unix s), NULL when none. gpuacct check fails while
-- incoming holds files older than a few passes.
ALTER TABLE passes ADD COLUMN files_left INTEGER NOT NULL DEFAULT 0;
ALTER TABLE passes ADD COLUMN oldest_left INTEGER;
