//! The values and rows every query passes through, whichever database runs it: parameters are
//! [`SqlValue`]s, results are [`Row`]s read by column index into the store's own types. This is
//! what lets each query be written once, with `?` placeholders, for SQLite and PostgreSQL.
//!
//! Integers read back are converted with `try_from`, never `as`: a value out of range is a
//! [`StoreError::Column`], not a silently wrapped number.

use crate::error::StoreError;
use postgres::types::{ToSql, Type};

/// A parameter or a column's value, in the types both databases store.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SqlValue {
    /// SQL NULL.
    Null,
    /// `BIGINT` (SQLite INTEGER).
    Int(i64),
    /// `DOUBLE PRECISION` (SQLite REAL).
    Float(f64),
    /// `TEXT`.
    Text(String),
    /// `BYTEA` (SQLite BLOB).
    Blob(Vec<u8>),
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        SqlValue::Int(v)
    }
}

impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        SqlValue::Text(v.to_owned())
    }
}

impl From<String> for SqlValue {
    fn from(v: String) -> Self {
        SqlValue::Text(v)
    }
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(SqlValue::Null, Into::into)
    }
}

impl From<f64> for SqlValue {
    fn from(v: f64) -> Self {
        SqlValue::Float(v)
    }
}

impl From<u32> for SqlValue {
    fn from(v: u32) -> Self {
        SqlValue::Int(i64::from(v))
    }
}

/// A count or size as a `BIGINT` (saturating: no count of this store comes near `i64::MAX`).
pub(crate) fn int_of(v: impl TryInto<i64>) -> SqlValue {
    SqlValue::Int(v.try_into().unwrap_or(i64::MAX))
}

/// One result row, its columns in the query's order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row(pub(crate) Vec<SqlValue>);

/// The error for column `i` holding something other than `want`.
fn bad(i: usize, want: &str, got: &SqlValue) -> StoreError {
    let got = match got {
        SqlValue::Null => "NULL",
        SqlValue::Int(_) => "an integer",
        SqlValue::Float(_) => "a float",
        SqlValue::Text(_) => "text",
        SqlValue::Blob(_) => "bytes",
    };
    StoreError::Column {
        column: i,
        detail: format!("expected {want}, found {got}"),
    }
}

impl Row {
    fn at(&self, i: usize) -> &SqlValue {
        self.0.get(i).unwrap_or(&SqlValue::Null)
    }

    /// A nullable integer.
    pub(crate) fn opt_i64(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.at(i) {
            SqlValue::Null => Ok(None),
            SqlValue::Int(v) => Ok(Some(*v)),
            other => Err(bad(i, "an integer", other)),
        }
    }

    /// An integer.
    pub(crate) fn i64(&self, i: usize) -> Result<i64, StoreError> {
        self.opt_i64(i)?
            .ok_or_else(|| bad(i, "an integer", &SqlValue::Null))
    }

    /// A nullable integer that must fit `T` (a count, a concurrency).
    pub(crate) fn opt_int<T: TryFrom<i64>>(&self, i: usize) -> Result<Option<T>, StoreError> {
        self.opt_i64(i)?
            .map(|v| {
                T::try_from(v).map_err(|_| StoreError::Column {
                    column: i,
                    detail: format!("{v} is out of range"),
                })
            })
            .transpose()
    }

    /// An integer that must fit `T`.
    pub(crate) fn int<T: TryFrom<i64>>(&self, i: usize) -> Result<T, StoreError> {
        self.opt_int(i)?
            .ok_or_else(|| bad(i, "an integer", &SqlValue::Null))
    }

    /// A nullable float (an integer stored in a float column reads as a float).
    pub(crate) fn opt_f64(&self, i: usize) -> Result<Option<f64>, StoreError> {
        match self.at(i) {
            SqlValue::Null => Ok(None),
            SqlValue::Float(v) => Ok(Some(*v)),
            // SQLite may keep a whole number given to a REAL column as an integer.
            SqlValue::Int(v) => Ok(Some(*v as f64)),
            other => Err(bad(i, "a float", other)),
        }
    }

    /// Nullable text.
    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.at(i) {
            SqlValue::Null => Ok(None),
            SqlValue::Text(v) => Ok(Some(v.clone())),
            other => Err(bad(i, "text", other)),
        }
    }

    /// Text.
    pub(crate) fn text(&self, i: usize) -> Result<String, StoreError> {
        self.opt_text(i)?
            .ok_or_else(|| bad(i, "text", &SqlValue::Null))
    }

    /// Bytes.
    pub(crate) fn blob(&self, i: usize) -> Result<Vec<u8>, StoreError> {
        match self.at(i) {
            SqlValue::Blob(v) => Ok(v.clone()),
            other => Err(bad(i, "bytes", other)),
        }
    }
}

impl rusqlite::ToSql for SqlValue {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::ValueRef;
        Ok(rusqlite::types::ToSqlOutput::Borrowed(match self {
            SqlValue::Null => ValueRef::Null,
            SqlValue::Int(v) => ValueRef::Integer(*v),
            SqlValue::Float(v) => ValueRef::Real(*v),
            SqlValue::Text(v) => ValueRef::Text(v.as_bytes()),
            SqlValue::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

/// A SQLite row as a [`Row`].
pub(crate) fn sqlite_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    use rusqlite::types::ValueRef;
    let n = r.as_ref().column_count();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(match r.get_ref(i)? {
            ValueRef::Null => SqlValue::Null,
            ValueRef::Integer(v) => SqlValue::Int(v),
            ValueRef::Real(v) => SqlValue::Float(v),
            ValueRef::Text(v) => SqlValue::Text(String::from_utf8_lossy(v).into_owned()),
            ValueRef::Blob(v) => SqlValue::Blob(v.to_vec()),
        });
    }
    Ok(Row(out))
}

/// A PostgreSQL row as a [`Row`]: each column read by its declared type.
pub(crate) fn postgres_row(r: &postgres::Row) -> Result<Row, StoreError> {
    let mut out = Vec::with_capacity(r.len());
    for (i, col) in r.columns().iter().enumerate() {
        let ty = col.type_();
        let v = if *ty == Type::INT8 {
            r.try_get::<_, Option<i64>>(i)?.into()
        } else if *ty == Type::INT4 {
            r.try_get::<_, Option<i32>>(i)?.map(i64::from).into()
        } else if *ty == Type::INT2 {
            r.try_get::<_, Option<i16>>(i)?.map(i64::from).into()
        } else if *ty == Type::FLOAT8 {
            r.try_get::<_, Option<f64>>(i)?.into()
        } else if *ty == Type::BYTEA {
            r.try_get::<_, Option<Vec<u8>>>(i)?
                .map_or(SqlValue::Null, SqlValue::Blob)
        } else if *ty == Type::BOOL {
            r.try_get::<_, Option<bool>>(i)?.map(i64::from).into()
        } else {
            // TEXT, VARCHAR, NAME (and anything else PostgreSQL can give as text).
            r.try_get::<_, Option<String>>(i)?.into()
        };
        out.push(v);
    }
    Ok(Row(out))
}

/// A parameter for PostgreSQL, typed as the prepared statement declares it: a NULL must carry
/// the column's type, and an integer for an `INTEGER` parameter must fit 32 bits.
pub(crate) fn postgres_param<'a>(
    v: &'a SqlValue,
    ty: &Type,
) -> Result<Box<dyn ToSql + Sync + 'a>, StoreError> {
    Ok(match v {
        SqlValue::Null if *ty == Type::INT8 => Box::new(None::<i64>),
        SqlValue::Null if *ty == Type::INT4 => Box::new(None::<i32>),
        SqlValue::Null if *ty == Type::FLOAT8 => Box::new(None::<f64>),
        SqlValue::Null if *ty == Type::BYTEA => Box::new(None::<&[u8]>),
        SqlValue::Null => Box::new(None::<&str>),
        SqlValue::Int(i) if *ty == Type::INT4 => {
            Box::new(i32::try_from(*i).map_err(|_| StoreError::Column {
                column: 0,
                detail: format!("parameter {i} does not fit an INTEGER"),
            })?)
        }
        SqlValue::Int(i) => Box::new(*i),
        SqlValue::Float(f) => Box::new(*f),
        SqlValue::Text(s) => Box::new(s.as_str()),
        SqlValue::Blob(b) => Box::new(b.as_slice()),
    })
}

/// `?` placeholders as PostgreSQL's `$1, $2, …` (a `?` inside a quoted literal is kept).
pub(crate) fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0u32;
    let mut quoted = false;
    for ch in sql.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                out.push(ch);
            }
            '?' if !quoted => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(ch),
        }
    }
    out
}
