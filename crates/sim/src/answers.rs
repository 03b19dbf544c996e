//! Answers to fixture questions (`answer_accuracy`): this project's fixture datasets put a
//! `⟦sim:ID:ANSWER⟧` marker in each question; the simulator answers the item correctly when the
//! item id's hash falls under the accuracy, and wrongly (the next number or letter) otherwise.
//! The decision depends on the id alone, so the items one simulator gets right at 0.74 are a
//! subset of those it gets right at 0.80: a paired comparison has a known set of flips.

/// A stable hash of an item id in [0, 1).
pub fn item_draw(id: &str) -> f64 {
    // FNV-1a, then the top bits: stable across runs, platforms and versions.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // FNV's high bits barely move between ids that differ in their last characters: mix them
    // (splitmix64's finaliser) so the draws spread over [0, 1).
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether the simulator answers item `id` correctly at `accuracy`.
pub fn answers_correctly(id: &str, accuracy: f64) -> bool {
    item_draw(id) < accuracy
}

/// The output words for a request whose body holds a fixture marker: `words` filler words,
/// then `#### N` (numbers) or `Answer: X` (letters). `None` without a marker.
pub(crate) fn script(body: &[u8], accuracy: f64, words: u32) -> Option<Vec<String>> {
    let text = std::str::from_utf8(body).ok()?;
    let open = "\u{27e6}sim:";
    let start = text.find(open)? + open.len();
    let end = start + text[start..].find('\u{27e7}')?;
    let (id, answer) = text[start..end].split_once(':')?;
    let given = if answers_correctly(id, accuracy) {
        answer.to_string()
    } else {
        wrong(answer)
    };
    let mut out: Vec<String> = (0..words).map(|_| "thinking".to_string()).collect();
    if answer.len() == 1 && answer.chars().all(|c| c.is_ascii_uppercase()) {
        out.push("Answer:".into());
    } else {
        out.push("####".into());
    }
    out.push(given);
    Some(out)
}

/// A wrong answer: the next letter (J wraps to A), or the number plus one.
fn wrong(answer: &str) -> String {
    match answer.chars().next() {
        Some(c) if answer.len() == 1 && c.is_ascii_uppercase() => {
            let next = if c >= 'J' { 'A' } else { (c as u8 + 1) as char };
            next.to_string()
        }
        _ => answer
            .parse::<i64>()
            .map_or_else(|_| format!("{answer}0"), |n| (n + 1).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_give_scripted_answers_decided_by_the_id() {
        let body = "{\"messages\":[{\"content\":\"Q? \u{27e6}sim:g1:42\u{27e7}\"}]}";
        let right = script(body.as_bytes(), 1.0, 2).expect("marker");
        assert_eq!(right, ["thinking", "thinking", "####", "42"]);
        let wrong = script(body.as_bytes(), 0.0, 0).expect("marker");
        assert_eq!(wrong, ["####", "43"]);
        let mc = "\u{27e6}sim:m1:J\u{27e7}";
        assert_eq!(
            script(mc.as_bytes(), 0.0, 0).expect("marker"),
            ["Answer:", "A"]
        );
        assert_eq!(script(b"no marker", 1.0, 2), None);
        // Spread: about 80 % of 1000 ids are right at 0.80.
        let right = (0..1000)
            .filter(|i| answers_correctly(&format!("item-{i}"), 0.8))
            .count();
        assert!((740..860).contains(&right), "{right}");
        // Nested: right at 0.74 implies right at 0.80.
        for i in 0..200 {
            let id = format!("item-{i}");
            if answers_correctly(&id, 0.74) {
                assert!(answers_correctly(&id, 0.80));
            }
        }
    }
}
