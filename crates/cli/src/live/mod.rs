//! What a run shows and publishes while it goes: the display driver (dashboard, lines or JSON
//! events, the hardware monitor, Ctrl-C), the `--events` file and the `--metrics-listen`
//! endpoint. Apart from the commands so that `run`, `demo` and `sweep` share one of each.

pub mod drive;
pub mod event_file;
pub mod metrics_listen;
