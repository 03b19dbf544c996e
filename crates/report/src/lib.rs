//! Exporters of a results directory: HTML page, Markdown, CSV, JSON, and `compare`.
