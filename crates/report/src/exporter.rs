//! What every exporter is: a [`Report`] in, the text of one format out.

use crate::error::ReportError;
use crate::format::Format;
use crate::model::Report;

/// Turns a [`Report`] into the text of one format. Exporters hold no state; all they show comes
/// from the report.
pub trait Exporter {
    /// Which format this is.
    fn format(&self) -> Format;
    /// Renders the whole document.
    fn render(&self, report: &Report) -> Result<String, ReportError>;
}
