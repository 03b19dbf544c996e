-- The first schema. Portable SQL: SQLite and PostgreSQL both run it, with {id_pk} and {blob}
-- filled per database. Times are RFC 3339 UTC text, which sorts as time.

CREATE TABLE tokens (
    id {id_pk},
    name TEXT NOT NULL,
    -- sha256 (hex) of the secret; the secret itself is shown once and never stored.
    secret_sha256 TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT NULL
);

CREATE TABLE runs (
    id {id_pk},
    -- sha256 (hex) of run.json as stored: the same run uploaded twice has the same key.
    run_key TEXT NOT NULL UNIQUE,
    uploaded_at TEXT NOT NULL,
    uploaded_by BIGINT NULL REFERENCES tokens (id),
    model TEXT NOT NULL,
    engine TEXT NULL,
    engine_version TEXT NULL,
    quantization TEXT NULL,
    gpu_name TEXT NULL,
    gpu_count BIGINT NULL,
    started_at TEXT NULL,
    -- started_at's date (YYYY-MM-DD), the date filter's column.
    started_date TEXT NULL,
    tool_version TEXT NOT NULL,
    -- The standard matrix version the run follows (`--standard v1`), if any.
    standard TEXT NULL,
    run_state TEXT NOT NULL,
    schema_version BIGINT NOT NULL,
    cell_count BIGINT NOT NULL,
    -- Headline figures, so the list sorts on them without reading cells.
    best_decode_tok_per_s DOUBLE PRECISION NULL,
    best_prefill_tok_per_s DOUBLE PRECISION NULL,
    -- What free-text search reads: model, engine, GPU, quantization, notes.
    search_text TEXT NOT NULL
);

-- One index per filter, led by the filter and ending with the default sort (newest upload
-- first), so a filtered first page is an index range, not a scan and a sort.
CREATE INDEX runs_uploaded ON runs (uploaded_at, id);
CREATE INDEX runs_model ON runs (model, uploaded_at);
CREATE INDEX runs_engine ON runs (engine, uploaded_at);
CREATE INDEX runs_engine_version ON runs (engine_version, uploaded_at);
CREATE INDEX runs_quantization ON runs (quantization, uploaded_at);
CREATE INDEX runs_gpu ON runs (gpu_name, uploaded_at);
CREATE INDEX runs_gpu_count ON runs (gpu_count, uploaded_at);
CREATE INDEX runs_started ON runs (started_date, uploaded_at);
CREATE INDEX runs_tool ON runs (tool_version, uploaded_at);
CREATE INDEX runs_standard ON runs (standard, uploaded_at);
CREATE INDEX runs_best_decode ON runs (best_decode_tok_per_s);
CREATE INDEX runs_best_prefill ON runs (best_prefill_tok_per_s);

CREATE TABLE files (
    run_id BIGINT NOT NULL REFERENCES runs (id),
    name TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    content {blob} NOT NULL,
    PRIMARY KEY (run_id, name)
);

CREATE TABLE cells (
    run_id BIGINT NOT NULL REFERENCES runs (id),
    -- The row's place in cells.jsonl (after a resumed run's re-measures are folded).
    ord BIGINT NOT NULL,
    phase TEXT NOT NULL,
    context_tokens BIGINT NOT NULL,
    context_label TEXT NOT NULL,
    concurrency BIGINT NOT NULL,
    rate_mrps BIGINT NOT NULL,
    status TEXT NOT NULL,
    total_tok_per_s DOUBLE PRECISION NULL,
    per_request_tok_per_s DOUBLE PRECISION NULL,
    prompt_tok_per_s DOUBLE PRECISION NULL,
    ttft_ms_p50 DOUBLE PRECISION NULL,
    tbt_ms_p50 DOUBLE PRECISION NULL,
    capacity_request_rate DOUBLE PRECISION NULL,
    capacity_concurrency BIGINT NULL,
    PRIMARY KEY (run_id, ord)
);

-- The model page: valid cells of one phase per run.
CREATE INDEX cells_phase ON cells (run_id, phase, status, context_tokens, concurrency);
