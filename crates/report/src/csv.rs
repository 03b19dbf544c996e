//! CSV: one row per measurement, the seed's All-measurements columns with units in the headers,
//! generated from the same [`Column`] list as the tables. Values are unrounded numbers in the
//! header's unit (a spreadsheet should not parse `9,232.0`); null is an empty field.

use crate::model::Report;
use crate::table::{Column, Raw};
use crate::{Exporter, Format, ReportError};

/// The CSV exporter.
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvExporter;

/// Quotes a field when RFC 4180 requires it (comma, quote, line break).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Exporter for CsvExporter {
    fn format(&self) -> Format {
        Format::Csv
    }

    fn render(&self, report: &Report) -> Result<String, ReportError> {
        let mut out = String::new();
        let header: Vec<String> = Column::ALL.iter().map(|c| field(c.csv_header())).collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for cell in &report.cells {
            let row: Vec<String> = Column::ALL
                .iter()
                .map(|col| match col.raw(cell) {
                    Raw::Null => String::new(),
                    // `Display` of f64 is the shortest text that reads back to the same number.
                    Raw::Num(v) => v.to_string(),
                    Raw::Text(t) => field(&t),
                })
                .collect();
            out.push_str(&row.join(","));
            out.push('\n');
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(field("Valid"), "Valid");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
