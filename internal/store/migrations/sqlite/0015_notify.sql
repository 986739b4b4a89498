-- notify_messages: every message the notifier decided to send (mail to a
-- job's owner, a webhook post), written by the one writer before it is
-- attempted (invariant 11). key is the fire-once key (rule, condition,
-- recipient): a second enqueue of the same key adds nothing, so that a
-- restart, a second head or a re-ingest never sends twice. state is
-- queued (due at next_attempt), sent (at sent_at) or failed (given up
-- after attempts, last_error says why). Times are Unix seconds.
CREATE TABLE notify_messages (
    id           INTEGER PRIMARY KEY,
    key          TEXT NOT NULL UNIQUE,
    rule         TEXT NOT NULL,
    recipient    TEXT NOT NULL,               -- a mail address or a webhook's name
    channel      TEXT NOT NULL,               -- mail, webhook
    language     TEXT NOT NULL DEFAULT 'en',
    cluster      TEXT NOT NULL DEFAULT '',
    job          INTEGER,                     -- Slurm job id, NULL when about no job
    restart      INTEGER NOT NULL DEFAULT 0,
    user         TEXT NOT NULL DEFAULT '',    -- whom it is about (opt-outs, gpuacct notify list --user)
    subject      TEXT NOT NULL,
    body         TEXT NOT NULL,
    created      INTEGER NOT NULL,
    state        TEXT NOT NULL DEFAULT 'queued',
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_attempt INTEGER NOT NULL,
    last_error   TEXT NOT NULL DEFAULT '',
    sent_at      INTEGER
);
CREATE INDEX notify_messages_due ON notify_messages (next_attempt) WHERE state = 'queued';
CREATE INDEX notify_messages_job ON notify_messages (cluster, job);
CREATE INDEX notify_messages_user ON notify_messages (user, created);
CREATE INDEX notify_messages_sent ON notify_messages (sent_at) WHERE state = 'sent';

-- notify_optout: a user's opt-out of one rule ('all': every rule).
CREATE TABLE notify_optout (
    user    TEXT NOT NULL,
    rule    TEXT NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (user, rule)
) WITHOUT ROWID;
