//! The pure decisions behind the datasets: which items a profile takes (an evenly spread
//! subset, a stratified one for MMLU-Pro), GSM8K's reference answer, and the fixed order in
//! which a GPQA item's choices are shown. All deterministic, so two runs (an A/B pair) see the
//! same items in the same form.

/// N indices evenly spread over `0..len` (all of them when N ≥ len), in order.
pub fn spread(len: usize, n: Option<usize>) -> Vec<usize> {
    match n {
        Some(n) if n < len => (0..n).map(|i| i * len / n).collect(),
        _ => (0..len).collect(),
    }
}

/// A stratified subset of `n` items, `categories[i]` being item i's: each category gets its
/// share of `n` by largest remainder (ties to the category seen first), every category at least
/// one while `n` allows, and within a category its items evenly spread. Indices in file order.
pub fn stratified(categories: &[&str], n: usize) -> Vec<usize> {
    if n >= categories.len() {
        return (0..categories.len()).collect();
    }
    // Categories in order of first appearance, with their items (indexed by name: a file with
    // very many categories must not make this quadratic).
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, c) in categories.iter().enumerate() {
        match index.get(c) {
            Some(&g) => groups[g].1.push(i),
            None => {
                index.insert(c, groups.len());
                groups.push((c, vec![i]));
            }
        }
    }
    let total = categories.len();
    let floor: Vec<usize> = groups.iter().map(|(_, v)| v.len() * n / total).collect();
    let mut take = floor.clone();
    if n >= groups.len() {
        for t in take.iter_mut() {
            *t = (*t).max(1);
        }
    }
    // Hand out what is left by largest remainder, to groups still at their floor (one raised
    // to one already had its turn); take back from the largest shares if the at-least-one rule
    // overshot.
    let remainder = |g: usize| (groups[g].1.len() * n) % total;
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by(|&a, &b| remainder(b).cmp(&remainder(a)).then(a.cmp(&b)));
    let mut given: usize = take.iter().sum();
    for &g in order.iter().cycle().take(groups.len() * 2) {
        if given >= n {
            break;
        }
        if take[g] == floor[g] && take[g] < groups[g].1.len() {
            take[g] += 1;
            given += 1;
        }
    }
    while given > n {
        let Some(g) = (0..groups.len())
            .filter(|&g| take[g] > 1)
            .max_by(|&a, &b| take[a].cmp(&take[b]).then(b.cmp(&a)))
        else {
            break;
        };
        take[g] -= 1;
        given -= 1;
    }
    let mut out: Vec<usize> = groups
        .iter()
        .zip(&take)
        .flat_map(|((_, items), &k)| spread(items.len(), Some(k)).into_iter().map(|i| items[i]))
        .collect();
    out.sort_unstable();
    out
}

/// GSM8K's reference answer: the number after the solution's last `####`, without thousands
/// separators (`None` when the line is missing or empty).
pub fn gsm8k_answer(solution: &str) -> Option<String> {
    let (_, tail) = solution.rsplit_once("####")?;
    let a: String = tail.trim().chars().filter(|c| *c != ',').collect();
    (!a.is_empty()).then_some(a)
}

/// A fixed permutation of `0..n` decided by `key` alone (FNV-1a, then a Fisher–Yates shuffle
/// driven by splitmix64): the order in which an item's choices are shown, the same on every
/// run and machine.
pub fn permutation(key: &str, n: usize) -> Vec<usize> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut next = || {
        h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = h;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_takes_evenly_and_everything_past_the_length() {
        assert_eq!(spread(10, Some(3)), vec![0, 3, 6]);
        assert_eq!(spread(3, Some(5)), vec![0, 1, 2]);
        assert_eq!(spread(4, None), vec![0, 1, 2, 3]);
    }

    #[test]
    fn stratified_keeps_each_categorys_share() {
        // 60 a, 30 b, 10 c; 10 items: 6, 3, 1.
        let cats: Vec<&str> = (0..100)
            .map(|i| match i % 10 {
                0..=5 => "a",
                6..=8 => "b",
                _ => "c",
            })
            .collect();
        let pick = stratified(&cats, 10);
        assert_eq!(pick.len(), 10);
        let count = |k: &str| pick.iter().filter(|&&i| cats[i] == k).count();
        assert_eq!((count("a"), count("b"), count("c")), (6, 3, 1));
        assert!(
            pick.windows(2).all(|w| w[0] < w[1]),
            "file order, no repeats"
        );
        // Deterministic.
        assert_eq!(pick, stratified(&cats, 10));
    }

    #[test]
    fn stratified_gives_small_categories_one_and_stays_exact() {
        // 97 a, 1 b, 1 c, 1 d; 5 items: b, c and d get one each, a the other two.
        let mut cats = vec!["a"; 97];
        cats.extend(["b", "c", "d"]);
        let pick = stratified(&cats, 5);
        assert_eq!(pick.len(), 5);
        for k in ["b", "c", "d"] {
            assert_eq!(pick.iter().filter(|&&i| cats[i] == k).count(), 1, "{k}");
        }
        // At MMLU-Pro's scale (1,000 of 12,032) the shares still sum to exactly n.
        let cats: Vec<&str> = (0..12_032)
            .map(|i| ["x", "y", "z", "w"][(i * 7 + i / 13) % 4])
            .collect();
        assert_eq!(stratified(&cats, 1000).len(), 1000);
        assert_eq!(stratified(&cats, 20_000).len(), 12_032);
        // 9 / 45 / 46 of 100, 10 items: quotas 0.9, 4.5, 4.6. The small group is raised to one
        // and has had its turn; the remainder goes to 4.6.
        let mut cats = vec!["s"; 9];
        cats.extend(vec!["m"; 45]);
        cats.extend(vec!["l"; 46]);
        let pick = stratified(&cats, 10);
        let count = |k: &str| pick.iter().filter(|&&i| cats[i] == k).count();
        assert_eq!((count("s"), count("m"), count("l")), (1, 4, 5));
    }

    #[test]
    fn gsm8k_reference_answers() {
        assert_eq!(
            gsm8k_answer("She has 3 + 4 = <<3+4=7>>7.\n#### 7").as_deref(),
            Some("7")
        );
        assert_eq!(gsm8k_answer("...\n#### 1,250").as_deref(), Some("1250"));
        assert_eq!(gsm8k_answer("#### -3.5 ").as_deref(), Some("-3.5"));
        assert_eq!(gsm8k_answer("no marker"), None);
        assert_eq!(gsm8k_answer("####  "), None);
    }

    #[test]
    fn permutations_are_fixed_by_the_key() {
        let p = permutation("recABC", 4);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
        assert_eq!(p, permutation("recABC", 4));
        // Over many keys the correct choice (index 0) lands in every position.
        let mut seen = [0u32; 4];
        for i in 0..400 {
            let p = permutation(&format!("rec{i}"), 4);
            let pos = p.iter().position(|&x| x == 0).expect("0 is placed");
            seen[pos] += 1;
        }
        assert!(seen.iter().all(|&s| s > 60), "{seen:?}");
    }
}
