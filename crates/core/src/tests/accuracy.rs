use super::*;

#[test]
fn wilson_known_answers() {
    let (lo, hi) = wilson_95(8, 10).expect("interval");
    assert!(
        (lo - 0.4902).abs() < 1e-4 && (hi - 0.9433).abs() < 1e-4,
        "{lo} {hi}"
    );
    let (lo, hi) = wilson_95(0, 10).expect("interval");
    assert!(lo == 0.0 && (hi - 0.2775).abs() < 1e-4, "{hi}");
    assert_eq!(wilson_95(0, 0), None);
    assert_eq!(wilson_95(3, 2), None);
}

#[test]
fn profiles_are_spelled_as_the_flag_and_eval_json_spell_them() {
    for p in Profile::ALL {
        let json = serde_json::to_string(&p).expect("serialise");
        assert_eq!(json, format!("\"{}\"", p.name()));
        assert_eq!(
            serde_json::from_str::<Profile>(&json).expect("read back"),
            p
        );
        assert_eq!(p.to_string(), p.name());
    }
}

#[test]
fn accuracy_counts_the_correct_items() {
    let item = |c: Category| ItemScore {
        id: "x".into(),
        expected: "1".into(),
        parsed: None,
        category: c,
        subject: None,
        completion_tokens: None,
        finish_reason: None,
        error: None,
    };
    let items = [
        item(Category::Correct),
        item(Category::Wrong),
        item(Category::Truncated),
        item(Category::Correct),
    ];
    let acc = Accuracy::of(&items);
    assert_eq!((acc.n, acc.correct, acc.accuracy), (4, 2, 0.5));
    assert_eq!(acc.wilson_95, wilson_95(2, 4));
}
