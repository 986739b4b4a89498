-- applied_keys holds digests (write_keys.go): key_hi and key_lo are the
-- 16 first bytes of the key's sha256, content the 16 first bytes of the
-- sha256 of the record's content hash; about 40 bytes a row where the
-- text key and hex hash took about 100. Filled from the old table, renamed
-- applied_keys_text here (its primary key's index too, whose name the new
-- table's takes), by a Go step (migrateKeysStep), which then drops it.
ALTER TABLE applied_keys RENAME TO applied_keys_text;
ALTER INDEX applied_keys_pkey RENAME TO applied_keys_text_pkey;
CREATE TABLE applied_keys (
    key_hi        BIGINT NOT NULL,
    key_lo        BIGINT NOT NULL,
    content       BYTEA NOT NULL,
    at            BIGINT NOT NULL,
    PRIMARY KEY (key_hi, key_lo)
);
