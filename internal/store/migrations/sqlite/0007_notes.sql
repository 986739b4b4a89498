-- notes: notes and bookings users leave on a node or one of its GPUs
-- (gpuacct note). Active while created <= now < until and not removed;
-- removed notes are kept, with who removed them. gpu NULL: the whole
-- node. request is the id of the queued request that added the note, so
-- that a request applied again after a crash adds nothing twice.
CREATE TABLE notes (
    id          INTEGER PRIMARY KEY,
    cluster     TEXT NOT NULL DEFAULT '',
    node        TEXT NOT NULL,
    gpu         INTEGER,
    until       INTEGER NOT NULL,
    text        TEXT NOT NULL,
    author      TEXT NOT NULL DEFAULT '',
    uid         INTEGER NOT NULL,
    created     INTEGER NOT NULL,
    removed_at  INTEGER,
    removed_by  TEXT NOT NULL DEFAULT '',
    request     TEXT UNIQUE
);
CREATE INDEX notes_active ON notes (until) WHERE removed_at IS NULL;
