//! The columns of a telemetry series and their compact JSON: numbers rounded when pushed, whole
//! numbers written without a decimal point (`1980`, not `1980.0`), a missing reading `null`,
//! and a column that never had a reading left out of its line.

use serde::Serializer;
use serde::ser::SerializeSeq;

/// One column: a reading per sample, `None` where there was none.
pub(crate) type Col = Vec<Option<f64>>;

/// Whether no sample of the column has a reading (it is then left out of the line).
pub(crate) fn all_none<T>(c: &[Option<T>]) -> bool {
    c.iter().all(Option::is_none)
}

/// `v` rounded to `decimals` places; a value that is not finite (a Prometheus `NaN`) is no
/// reading.
pub(crate) fn round(v: Option<f64>, decimals: i32) -> Option<f64> {
    let v = v.filter(|x| x.is_finite())?;
    let k = 10f64.powi(decimals);
    Some((v * k).round() / k)
}

/// Writes a column with its whole numbers as integers (a counter of millions of tokens stays
/// `1234567`, not `1234567.0`).
pub(crate) fn compact<S: Serializer>(c: &Col, s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(c.len()))?;
    for v in c {
        match v {
            Some(x) => element(&mut seq, *x)?,
            None => seq.serialize_element(&None::<f64>)?,
        }
    }
    seq.end()
}

/// [`compact`] for a column without gaps (the sample times).
pub(crate) fn compact_times<S: Serializer>(c: &[f64], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(c.len()))?;
    for x in c {
        element(&mut seq, *x)?;
    }
    seq.end()
}

fn element<S: SerializeSeq>(seq: &mut S, x: f64) -> Result<(), S::Error> {
    // Whole numbers below 2^53 are exact as i64.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if x.fract() == 0.0 && x.abs() < EXACT {
        seq.serialize_element(&(x as i64))
    } else {
        seq.serialize_element(&x)
    }
}
