//! The images section (`run --images`; docs/images.md): per row measured with images, one
//! line per group of requests whose images had the same sizes: the images per request, the
//! sizes, the requests the server counted, the image tokens it counted for each (its usage's
//! prompt count less the text part's exact count), and how many requests it counted otherwise.

use crate::model::Report;
use crate::number;
use crate::table::Table;
use llmib_core::{CellResult, ImageFigures, ImageGroup};

/// The section's caption, shared by the page and the Markdown.
pub(crate) const IMAGES_CAPTION: &str = "Each row's requests carried images (--images): per \
    group of requests whose images had the same sizes, the image tokens per request, counted \
    from the server's usage (its prompt count less the text part's exact count; no engine \
    counts an image before it is sent), and the requests it counted otherwise (each a prompt \
    length mismatch).";

const COLS: [(&str, bool); 7] = [
    ("Cell", false),
    ("Images/request", true),
    ("Sizes", false),
    ("Requests", true),
    ("Image tokens", true),
    ("Counted otherwise", true),
    ("Counted by", false),
];

/// One line's texts, in [`COLS`] order.
fn texts(c: &CellResult, f: &ImageFigures, g: &ImageGroup) -> Vec<String> {
    vec![
        format!("{} {}", c.phase.label(), Report::cell_label(c)),
        number::count(u64::from(f.per_request)),
        g.sizes.clone(),
        number::count(g.requests),
        g.image_tokens.to_string(),
        number::count(g.differing),
        f.counted_by.clone(),
    ]
}

impl Table {
    /// Every row with images, in the run's order, one line per group of sizes; `None` when
    /// no row has any.
    pub fn images(report: &Report) -> Option<Table> {
        let rows = report
            .cells
            .iter()
            .filter_map(|c| c.images.as_deref().map(|f| (c, f)))
            .flat_map(|(c, f)| f.groups.iter().map(move |g| (c, texts(c, f, g))))
            .collect();
        Table::of_texts(&COLS, rows)
    }
}
