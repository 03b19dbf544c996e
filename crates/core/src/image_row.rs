//! A row of image requests made whole (docs/images.md): the figures of `crate::images` put
//! on the row, and a rate row's input throughput counted back from the server's full counts.
//! Apart from `crate::images` because the row type itself holds those figures.

use crate::cell::CellResult;
use crate::images::ImageFigures;
use crate::record::RequestRecord;

/// A row built from [`crate::images::ImageCheck::text_part`] made whole again: its image figures set (where
/// the row has figures), and a rate row's input tok/s counted from `records` as measured, image
/// tokens included (the server prefilled them), by the rate row's own rule over its span.
pub fn finish_image_row(row: &mut CellResult, records: &[RequestRecord], figures: ImageFigures) {
    if !row.status.has_figures() {
        return;
    }
    row.images = Some(Box::new(figures));
    let Some(f) = row.rate.as_deref_mut() else {
        return;
    };
    (f.input_tok_per_s, f.input_output_tok_per_s) =
        crate::load::input_throughputs(records, f.span_s);
}
