//! Known answers of the shard rules: `--shard` parsing, `auto` from each job engine, which
//! requests and streams a shard takes, the plan hash, and the merge check.

use super::*;
use crate::plan::{Plan, Settings, plan_hash};
use std::collections::HashMap;

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

#[test]
fn shards_parse_and_bad_ones_say_how_to_write_them() {
    assert_eq!(
        "2/4".parse::<ShardArg>(),
        Ok(ShardArg::Fixed(ShardSpec { index: 2, count: 4 }))
    );
    assert_eq!("AUTO".parse::<ShardArg>(), Ok(ShardArg::Auto));
    for bad in ["4/4", "0/0", "1", "a/b", "-1/2", "0/5000", ""] {
        let e = bad.parse::<ShardArg>().expect_err(bad);
        assert!(e.to_string().contains("I/N"), "{bad}: {e}");
    }
    assert_eq!(ShardSpec { index: 1, count: 3 }.to_string(), "1/3");
}

#[test]
fn auto_reads_kubernetes_then_slurm() {
    let k8s = env(&[("JOB_COMPLETION_INDEX", "3")]);
    assert_eq!(
        resolve_auto(Some(4), &k8s),
        Ok(ShardSpec { index: 3, count: 4 })
    );
    assert_eq!(resolve_auto(None, &k8s), Err(ShardError::NoCount));
    assert!(matches!(
        resolve_auto(Some(3), &k8s),
        Err(ShardError::BadIndex { count: 3, .. })
    ));
    // `--array=1-4`: ids 1..4 are shards 0..3.
    let slurm = env(&[
        ("SLURM_ARRAY_TASK_ID", "4"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
        ("SLURM_ARRAY_TASK_MIN", "1"),
    ]);
    assert_eq!(
        resolve_auto(None, &slurm),
        Ok(ShardSpec { index: 3, count: 4 })
    );
    let slurm0 = env(&[
        ("SLURM_ARRAY_TASK_ID", "0"),
        ("SLURM_ARRAY_TASK_COUNT", "2"),
    ]);
    assert_eq!(
        resolve_auto(None, &slurm0),
        Ok(ShardSpec { index: 0, count: 2 })
    );
    let e = resolve_auto(None, &env(&[])).expect_err("no engine");
    assert!(e.to_string().contains("--shard I/N"), "{e}");
}

#[test]
fn shards_together_take_every_request_and_stream_once() {
    let shards: Vec<ShardSpec> = (0..3).map(|i| ShardSpec { index: i, count: 3 }).collect();
    let taken: Vec<Vec<u32>> = shards.iter().map(|s| s.streams(100)).collect();
    for i in 0..100u32 {
        assert_eq!(
            taken.iter().filter(|t| t.contains(&i)).count(),
            1,
            "request {i}"
        );
    }
    for n in 0..20u64 {
        for s in &shards {
            assert_eq!(s.share(n), s.streams(n as u32).len() as u64, "{s} of {n}");
        }
    }
    assert_eq!(shards[1].streams(8), vec![1, 4, 7]);
    assert_eq!(
        shards[2].streams(2),
        Vec::<u32>::new(),
        "N below the shard count"
    );
    let mut all: Vec<u32> = shards.iter().flat_map(|s| s.streams(8)).collect();
    all.sort_unstable();
    assert_eq!(all, (0..8).collect::<Vec<u32>>());
}

#[test]
fn the_plan_hash_ignores_the_shard_and_sees_everything_else() {
    let plan = |shard: Option<ShardSpec>, seed: u64| {
        let settings = Settings {
            shard,
            prompt_seed: seed,
            ..Settings::default()
        };
        Plan::build(settings, Some(131_072), Some(1 << 20))
    };
    let a = plan_hash(&plan(Some(ShardSpec { index: 0, count: 2 }), 7));
    assert_eq!(a.len(), 16);
    assert_eq!(
        a,
        plan_hash(&plan(Some(ShardSpec { index: 1, count: 2 }), 7))
    );
    assert_ne!(
        a,
        plan_hash(&plan(Some(ShardSpec { index: 1, count: 2 }), 8))
    );
}

#[test]
fn a_merge_needs_every_shard_of_one_plan_once() {
    let id = |dir: &str, i: u32, n: u32, hash: &str| ShardIdentity {
        dir: dir.into(),
        shard: Some(ShardSpec { index: i, count: n }),
        plan_hash: hash.into(),
    };
    let whole = [id("a", 0, 3, "h"), id("c", 2, 3, "h"), id("b", 1, 3, "h")];
    assert_eq!(check_shards(&whole), Ok(3));
    let missing = check_shards(&whole[..2]).expect_err("missing");
    assert_eq!(
        missing,
        MergeError::Missing {
            missing: vec![1],
            count: 3
        }
    );
    assert!(missing.to_string().contains("[1]"), "{missing}");
    let doubled = [id("a", 0, 2, "h"), id("b", 0, 2, "h"), id("c", 1, 2, "h")];
    let e = check_shards(&doubled).expect_err("doubled");
    assert!(
        e.to_string().contains("shard 0 is given twice: a and b"),
        "{e}"
    );
    let other = [id("a", 0, 2, "h"), id("b", 1, 2, "g")];
    assert!(matches!(
        check_shards(&other),
        Err(MergeError::OtherPlan { .. })
    ));
    let count = [id("a", 0, 2, "h"), id("b", 1, 3, "h")];
    assert!(matches!(
        check_shards(&count),
        Err(MergeError::OtherCount { .. })
    ));
    let plain = ShardIdentity {
        shard: None,
        ..id("x", 0, 1, "h")
    };
    assert_eq!(
        check_shards(&[plain]),
        Err(MergeError::NotSharded("x".into()))
    );
    assert_eq!(check_shards(&[]), Err(MergeError::Empty));
}
