//! A row of image requests made whole (docs/images.md): the figures of `crate::images` put
//! on the row, and a rate row's input throughput counted back from the server's full counts.
//! Apart from `crate::images` because the row type itself holds those figures.

use crate::cell::CellResult;
use crate::images::ImageFigures;
use crate::record::{Outcome, RequestRecord};

/// A row built from [`crate::images::ImageCheck::text_part`] made whole again: its image figures set (where
/// the row has figures), and a rate row's input tok/s counted from `records` as measured, image
/// tokens included (the server prefilled them), as `crate::load` counts them: the finished
/// requests' server counts over the row's span, `None` when a finished request had none.
pub fn finish_image_row(row: &mut CellResult, records: &[RequestRecord], figures: ImageFigures) {
    if !row.status.has_figures() {
        return;
    }
    row.images = Some(Box::new(figures));
    let Some(f) = row.rate.as_deref_mut() else {
        return;
    };
    let input: Option<u64> = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Finished { .. }))
        .map(|r| r.prompt_tokens_reported)
        .sum();
    let tokens: u64 = records.iter().map(RequestRecord::tokens).sum();
    f.input_tok_per_s = f.span_s.zip(input).map(|(s, i)| i as f64 / s);
    f.input_output_tok_per_s = f.span_s.zip(input).map(|(s, i)| (i + tokens) as f64 / s);
}
