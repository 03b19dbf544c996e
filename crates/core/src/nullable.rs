//! How a row's optional columns are read back: a field that is absent (`None`: not this kind
//! of row), null (`Some(None)`: this kind of row, no figure) or a value. The open-loop and the
//! session columns are written as null where they do not apply, so a reader can tell the two.

use serde::{Deserialize, Deserializer};

/// Reads a field that is absent (`None`), null (`Some(None)`) or a value (`Some(Some(v))`);
/// used with `#[serde(default, deserialize_with = "crate::nullable::present")]`.
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}
