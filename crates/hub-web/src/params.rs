//! Query parameters: the list's filters, sort and page, and the runs to compare. Parsed by hand
//! from the raw query (repeated keys such as `ids=1&ids=2` are a list), each bad value a 400
//! with one line; unknown keys are ignored (a browser's form may add its button's name).

use crate::error::WebError;
use llmib_hub::{ListFilter, Page, RunId, SortKey};

/// The query's `(key, value)` pairs, decoded, in order.
pub(crate) fn pairs(raw: Option<&str>) -> Result<Vec<(String, String)>, WebError> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(raw.unwrap_or(""))
        .map_err(|e| WebError::BadRequest(format!("the query string is not a form: {e}")))
}

/// `(key, value)` pairs as a query string (no leading `?`), for links that keep a query.
pub(crate) fn encode(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

/// The sort names of the list, in the order the page's columns show them.
pub(crate) const SORTS: [(&str, SortKey); 8] = [
    ("uploaded", SortKey::UploadedAt),
    ("started", SortKey::StartedAt),
    ("model", SortKey::Model),
    ("engine", SortKey::Engine),
    ("gpu", SortKey::Gpu),
    ("tool", SortKey::ToolVersion),
    ("decode", SortKey::BestDecode),
    ("prefill", SortKey::BestPrefill),
];

/// The filter keys of the list, as the query spells them.
pub(crate) const FILTER_KEYS: [&str; 11] = [
    "model",
    "engine",
    "engine_version",
    "quantization",
    "gpu",
    "gpu_count",
    "from",
    "to",
    "tool_version",
    "standard",
    "q",
];

/// The list's query, parsed.
#[derive(Debug, Clone)]
pub(crate) struct ListQuery {
    /// The filters.
    pub(crate) filter: ListFilter,
    /// The sort, direction and window.
    pub(crate) page: Page,
    /// The sort's name (`uploaded`).
    pub(crate) sort: &'static str,
    /// 1-based page number.
    pub(crate) page_no: u32,
    /// The filter pairs as given (non-empty), to keep in links.
    pub(crate) kept: Vec<(String, String)>,
}

fn number<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, WebError> {
    v.trim().parse().map_err(|_| {
        WebError::BadRequest(format!(
            "`{key}` must be a whole number, not `{}`",
            v.trim()
        ))
    })
}

fn date(key: &str, v: &str) -> Result<String, WebError> {
    let ok = v.len() == 10
        && v.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    if ok {
        Ok(v.to_string())
    } else {
        Err(WebError::BadRequest(format!(
            "`{key}` must be a date as YYYY-MM-DD, not `{v}`"
        )))
    }
}

/// Sets one filter from its key; false for a key that is not a filter.
fn set_filter(f: &mut ListFilter, key: &str, v: String) -> Result<bool, WebError> {
    match key {
        "model" => f.model = Some(v),
        "engine" => f.engine = Some(v),
        "engine_version" => f.engine_version = Some(v),
        "quantization" => f.quantization = Some(v),
        "gpu" => f.gpu_name = Some(v),
        "gpu_count" => f.gpu_count = Some(number(key, &v)?),
        "from" => f.started_from = Some(date(key, &v)?),
        "to" => f.started_to = Some(date(key, &v)?),
        "tool_version" => f.tool_version = Some(v),
        "standard" => f.standard = Some(v),
        "q" => f.text = Some(v),
        _ => return Ok(false),
    }
    Ok(true)
}

/// Parses the list's query: filters, `sort`, `dir`, `page` (from 1), `per_page` (1–500).
pub(crate) fn list_query(raw: Option<&str>) -> Result<ListQuery, WebError> {
    let mut q = ListQuery {
        filter: ListFilter::default(),
        page: Page::default(),
        sort: "uploaded",
        page_no: 1,
        kept: Vec::new(),
    };
    let mut dir: Option<bool> = None;
    for (key, value) in pairs(raw)? {
        // An empty field of the filter form means "any".
        if value.trim().is_empty() {
            continue;
        }
        match key.as_str() {
            "sort" => {
                let (name, key) = SORTS.iter().find(|(n, _)| *n == value).ok_or_else(|| {
                    let names: Vec<&str> = SORTS.iter().map(|s| s.0).collect();
                    WebError::BadRequest(format!(
                        "unknown sort `{value}`: use one of {}",
                        names.join(", ")
                    ))
                })?;
                q.sort = name;
                q.page.sort = *key;
            }
            "dir" => {
                dir = Some(match value.as_str() {
                    "asc" => false,
                    "desc" => true,
                    _ => {
                        return Err(WebError::BadRequest(format!(
                            "`dir` must be asc or desc, not `{value}`"
                        )));
                    }
                });
            }
            "page" => q.page_no = number::<u32>("page", &value)?.max(1),
            "per_page" => {
                let n: u32 = number("per_page", &value)?;
                if n == 0 || n > Page::MAX_LIMIT {
                    return Err(WebError::BadRequest(format!(
                        "`per_page` must be 1 to {}, not {n}",
                        Page::MAX_LIMIT
                    )));
                }
                q.page.limit = n;
            }
            k => {
                if set_filter(&mut q.filter, k, value.clone())? {
                    q.kept.push((key, value));
                }
            }
        }
    }
    // Names sort A to Z by default, times and figures largest first.
    let text_sort = matches!(q.sort, "model" | "engine" | "gpu" | "tool");
    q.page.descending = dir.unwrap_or(!text_sort);
    q.page.offset = (q.page_no - 1).saturating_mul(q.page.limit);
    Ok(q)
}

/// The runs to compare: `ids=1&ids=2` or `ids=1,2`, in order, repeats dropped; 2 to 6.
pub(crate) fn compare_ids(raw: Option<&str>) -> Result<Vec<RunId>, WebError> {
    let mut ids: Vec<RunId> = Vec::new();
    for (key, value) in pairs(raw)? {
        if key != "ids" {
            continue;
        }
        for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let id: RunId = part.parse().map_err(|_| {
                WebError::BadRequest(format!("`ids` holds run ids (numbers), not `{part}`"))
            })?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    if !(2..=6).contains(&ids.len()) {
        return Err(WebError::BadRequest(format!(
            "compare needs 2 to 6 different runs, got {}: choose them in the run list",
            ids.len()
        )));
    }
    Ok(ids)
}
