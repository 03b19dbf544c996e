use super::*;

#[test]
fn numbers_as_gsm8k_writes_them() {
    assert_eq!(parse_number("The answer is 42."), Some(42.0));
    assert_eq!(parse_number("so #### 1,234\nthen 5"), Some(1234.0));
    assert_eq!(parse_number("She pays $18.00 in all."), Some(18.0));
    assert_eq!(parse_number("costs $5 and rises 7%"), Some(7.0));
    assert_eq!(parse_number("#### -3"), Some(-3.0));
    assert_eq!(parse_number("1,234.50 dollars"), Some(1234.5));
    assert_eq!(parse_number("no number here"), None);
}

#[test]
fn letters_from_answer_lines_or_the_last_standalone_one() {
    assert_eq!(parse_letter("Answer: C"), Some('C'));
    assert_eq!(parse_letter("**Answer:** (b)"), Some('B'));
    assert_eq!(parse_letter("I think it's D."), Some('D'));
    assert_eq!(parse_letter("Answer: A. Not B"), Some('A'));
    assert_eq!(parse_letter("the answer is Across"), None);
    assert_eq!(parse_letter("nothing"), None);
}

#[test]
fn categories_keep_truncation_apart() {
    use AnswerFormat::{Letter, Number};
    assert_eq!(score("#### 72", "72", Number, false), Category::Correct);
    assert_eq!(score("#### 71", "72", Number, false), Category::Wrong);
    assert_eq!(
        score("Let me think step by", "72", Number, true),
        Category::Truncated
    );
    assert_eq!(
        score("Let me think step 7", "72", Number, true),
        Category::Truncated
    );
    assert_eq!(
        score("I give up", "72", Number, false),
        Category::Unparseable
    );
    assert_eq!(score("Answer: b", "B", Letter, false), Category::Correct);
    assert_eq!(score("Answer: C", "B", Letter, true), Category::Truncated);
}

#[test]
fn mcnemar_exact_known_answers() {
    // 1 vs 9 discordant: 2 × (1 + 10) / 1024.
    assert!((mcnemar_exact(1, 9) - 22.0 / 1024.0).abs() < 1e-12);
    assert!(
        (mcnemar_exact(9, 1) - 22.0 / 1024.0).abs() < 1e-12,
        "symmetric"
    );
    assert!((mcnemar_exact(0, 6) - 2.0 / 64.0).abs() < 1e-12);
    assert_eq!(mcnemar_exact(5, 5), 1.0);
    assert_eq!(mcnemar_exact(0, 0), 1.0);
    // Large n stays finite and tiny.
    let p = mcnemar_exact(400, 600);
    assert!(p > 0.0 && p < 1e-9, "{p}");
}

fn item(id: &str, cat: Category, subject: &str, tokens: u64) -> ItemScore {
    ItemScore {
        id: id.into(),
        expected: "1".into(),
        parsed: None,
        category: cat,
        subject: Some(subject.into()),
        completion_tokens: Some(tokens),
        finish_reason: None,
        error: None,
    }
}

#[test]
fn pairing_known_answers() {
    use Category::{Correct as C, Truncated as T, Wrong as W};
    let a = [
        item("1", C, "math", 10),
        item("2", C, "math", 10),
        item("3", W, "law", 10),
        item("4", C, "law", 10),
        item("5", T, "law", 10),
        item("only-a", C, "law", 10),
    ];
    let b = [
        item("1", C, "math", 20),
        item("2", W, "math", 20),
        item("3", C, "law", 20),
        item("4", C, "law", 20),
        item("5", T, "law", 20),
    ];
    let p = pair(&a, &b);
    assert_eq!(p.n, 5, "unpaired items are left out");
    assert_eq!((p.a.correct, p.b.correct), (3, 3));
    assert_eq!(
        (p.a_only.clone(), p.b_only.clone()),
        (vec!["2".to_string()], vec!["3".to_string()])
    );
    assert_eq!(p.p_value, 1.0);
    assert_eq!(p.token_inflation, Some(2.0));
    assert_eq!(p.truncated, (1, 1));
    // math: 1.0 → 0.5 (−0.5) is worse than law: 1/3 → 2/3.
    assert_eq!(p.by_subject[0].0, "math");
    assert!((p.by_subject[0].3 + 0.5).abs() < 1e-12);
    let acc = Accuracy::of(&a);
    assert_eq!((acc.n, acc.correct), (6, 4));
}
