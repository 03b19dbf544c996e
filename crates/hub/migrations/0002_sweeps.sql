-- Sweeps: the runs of one `sweep` kept as one group. A run names its sweep and combination
-- (run.json's `sweep`); the sweep's own file (sweep.json: its spec and every combination's
-- record, measured or not and why) is a row of its own, replaced as the sweep goes on.

ALTER TABLE runs ADD COLUMN sweep_key TEXT NULL;
ALTER TABLE runs ADD COLUMN combination TEXT NULL;
CREATE INDEX runs_sweep ON runs (sweep_key, combination, id);

CREATE TABLE sweeps (
    id {id_pk},
    -- sweep.json's id: the key its runs name.
    sweep_key TEXT NOT NULL UNIQUE,
    uploaded_at TEXT NOT NULL,
    uploaded_by BIGINT NULL REFERENCES tokens (id),
    started_at TEXT NULL,
    combination_count BIGINT NOT NULL,
    sweep_json {blob} NOT NULL
);
