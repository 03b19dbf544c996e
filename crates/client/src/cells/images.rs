//! Images in the cells (`run --images`; docs/images.md): each measured request of the
//! prefill, decode, burst and rate cells carries `--images` images, built here before the
//! request is timed (with its prompt, while the cell's inputs are prepared), and each row
//! reads the server's counts through `llmib_core::image_token_check`.
//!
//! A request's images are keyed, as its prompt is, by its context and stream index: a decode
//! stream's re-sends and its warm-up send the same images (so the warm-up fills the prefix
//! cache for them, as for the text), and every other request its own. Mixed-prefill and
//! session cells, probes and the hidden warm-ups send text only.

use std::borrow::Cow;

use llmib_core::{CellResult, ImageRequest, RequestRecord, finish_image_row, image_token_check};

use crate::cells::context::MatrixRun;
use crate::server::engine::{EngineError, ImagePart, PromptInput};
use crate::wire::stream::{RequestSpec, StreamLimits};

/// The images of the request of stream `stream` at `context` (none without `--images`).
fn images_of(m: &MatrixRun<'_>, context: u64, stream: u32) -> Result<Vec<ImagePart>, EngineError> {
    let Some(s) = &m.plan.settings.images else {
        return Ok(Vec::new());
    };
    (0..)
        .zip(s.sizes_of(context, stream))
        .map(|(j, z)| {
            let file = s
                .image(context, stream, j, z)
                .map_err(|e| EngineError::Body(e.to_string()))?;
            Ok(ImagePart {
                base64: llmib_core::base64(&file).into(),
                media_type: s.format.media_type(),
            })
        })
        .collect()
}

/// A measured request: its prompt, then its images (where the run sends some).
#[allow(clippy::too_many_arguments)]
pub(crate) fn request(
    m: &MatrixRun<'_>,
    model: &str,
    input: PromptInput,
    max_tokens: u32,
    deferred: bool,
    limits: StreamLimits,
    context: u64,
    stream: u32,
) -> Result<RequestSpec, EngineError> {
    let images = images_of(m, context, stream)?;
    m.engine
        .stream_request_with_images(model, input, max_tokens, deferred, limits, &images)
}

/// What a row's builder reads: the records as measured, or with `--images` each server count
/// less its image tokens (`llmib_core::image_token_check`), and the figures for
/// [`finish`]. `text_of` gives each record's built text tokens and `stream_of` its stream.
pub(crate) fn checked<'r>(
    m: &MatrixRun<'_>,
    context: u64,
    records: &'r [RequestRecord],
    text_of: &dyn Fn(&RequestRecord) -> u64,
    stream_of: &dyn Fn(&RequestRecord) -> Option<u32>,
) -> (Cow<'r, [RequestRecord]>, Option<llmib_core::ImageFigures>) {
    let Some(s) = &m.plan.settings.images else {
        return (Cow::Borrowed(records), None);
    };
    let of = |r: &RequestRecord| {
        Some(ImageRequest {
            text_tokens: text_of(r),
            sizes: s.sizes_of(context, stream_of(r)?),
        })
    };
    let c = image_token_check(s, records, &of);
    (Cow::Owned(c.text_part), Some(c.figures))
}

/// [`checked`] of a cell's requests: record k is stream `streams[k]`'s request, its text
/// built to `built[k]` tokens (a rate cell's part).
pub(crate) fn checked_part<'r>(
    m: &MatrixRun<'_>,
    context: u64,
    records: &'r [RequestRecord],
    built: &[u64],
    streams: &[u32],
) -> (Cow<'r, [RequestRecord]>, Option<llmib_core::ImageFigures>) {
    let at = |r: &RequestRecord| r.stream as usize;
    let text_of = |r: &RequestRecord| built.get(at(r)).copied().unwrap_or(context);
    let stream_of = |r: &RequestRecord| streams.get(at(r)).copied();
    checked(m, context, records, &text_of, &stream_of)
}

/// Sets a row's image figures, and a rate row's input tok/s back to the measured counts
/// (`llmib_core::finish_image_row`).
pub(crate) fn finish(
    row: &mut CellResult,
    records: &[RequestRecord],
    figures: Option<llmib_core::ImageFigures>,
) {
    if let Some(f) = figures {
        finish_image_row(row, records, f);
    }
}
