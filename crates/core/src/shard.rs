//! Load from several client machines (`run --shard I/N`): which part of one plan a shard
//! runs, which shard a Kubernetes Indexed Job or a Slurm array task is, the plan's identity
//! that every shard must share, and the check that a set of shard results is one whole run.
//! Pure: the environment is passed in as a lookup, so each rule is tested with known answers.
//!
//! Why by index modulo N: the open-loop schedule is drawn once from the run's seed, so every
//! shard draws the same global schedule and sends the arrivals whose index ≡ I (mod N) at their
//! global instants; the N shards together send exactly the one-machine schedule, and the
//! interleaving spreads bursts evenly over the shards. Closed-loop streams split the same way
//! (stream i runs on shard i mod N), so every N of the matrix is shared as evenly as it can be.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Shards a run may be split into: far more client machines than any fleet needs, and small
/// enough that a merge names each missing one.
pub const MAX_SHARDS: u32 = 4096;

/// One shard of a run: `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ShardSpec {
    /// This shard, 0 ≤ index < count.
    pub index: u32,
    /// Shards in the run.
    pub count: u32,
}

/// `--shard` as given: a fixed `I/N`, or `auto` (from the job engine's environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    /// `I/N`.
    Fixed(ShardSpec),
    /// `auto`: [`resolve_auto`].
    Auto,
}

/// A shard that could not be read or found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `I/N` or `auto`.
    #[error("`--shard {0}`: write I/N with 0 ≤ I < N ≤ 4096 (e.g. 0/4), or auto")]
    Bad(String),
    /// `auto` without an engine's variables.
    #[error(
        "--shard auto found no job index: set JOB_COMPLETION_INDEX with --shards N (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (Slurm array), or pass --shard I/N"
    )]
    NoEngine,
    /// A Kubernetes index without the shard count.
    #[error(
        "JOB_COMPLETION_INDEX is set but the number of shards is not: pass --shards N (the Job's completions)"
    )]
    NoCount,
    /// An engine variable that is not a valid index.
    #[error("{name}={value} is not a shard index of {count} shards")]
    BadIndex {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// The shard count.
        count: u32,
    },
}

impl ShardSpec {
    /// A shard, checked: `None` unless 0 ≤ index < count ≤ [`MAX_SHARDS`].
    pub fn new(index: u32, count: u32) -> Option<ShardSpec> {
        ((1..=MAX_SHARDS).contains(&count) && index < count).then_some(ShardSpec { index, count })
    }

    /// The global indices this shard runs of `n` (an N-stream cell's streams, or a schedule's
    /// requests): i ≡ index (mod count).
    pub fn streams(&self, n: u32) -> Vec<u32> {
        (self.index..n)
            .step_by(self.count.max(1) as usize)
            .collect()
    }

    /// How many of `n` this shard runs: the length of [`ShardSpec::streams`], counted.
    pub fn share(&self, n: u64) -> u64 {
        let (i, c) = (u64::from(self.index), u64::from(self.count.max(1)));
        if i < n { (n - i - 1) / c + 1 } else { 0 }
    }
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for ShardArg {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("auto") {
            return Ok(ShardArg::Auto);
        }
        let bad = || ShardError::Bad(s.to_string());
        let (i, n) = t.split_once('/').ok_or_else(bad)?;
        let (i, n) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        ShardSpec::new(i, n).map(ShardArg::Fixed).ok_or_else(bad)
    }
}

/// `--shard auto`: the shard from the job engine's environment (`env` looks a variable up).
/// A Kubernetes Indexed Job sets `JOB_COMPLETION_INDEX` (0-based) and the count comes from
/// `--shards N` (`shards`); a Slurm array sets `SLURM_ARRAY_TASK_ID` and
/// `SLURM_ARRAY_TASK_COUNT`, with ids from `SLURM_ARRAY_TASK_MIN` (0 when unset: `--array=1-4`
/// gives ids 1 to 4, shards 0 to 3). Kubernetes is checked first.
pub fn resolve_auto(
    shards: Option<u32>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ShardSpec, ShardError> {
    let parse = |name: &'static str, value: String, offset: u32, count: u32| {
        let bad = || ShardError::BadIndex {
            name,
            value: value.clone(),
            count,
        };
        let id: u32 = value.trim().parse().map_err(|_| bad())?;
        ShardSpec::new(id.checked_sub(offset).ok_or_else(bad)?, count).ok_or_else(bad)
    };
    if let Some(v) = env("JOB_COMPLETION_INDEX") {
        let count = shards.ok_or(ShardError::NoCount)?;
        return parse("JOB_COMPLETION_INDEX", v, 0, count);
    }
    if let (Some(id), Some(count)) = (env("SLURM_ARRAY_TASK_ID"), env("SLURM_ARRAY_TASK_COUNT")) {
        let count: u32 = count.trim().parse().map_err(|_| ShardError::BadIndex {
            name: "SLURM_ARRAY_TASK_COUNT",
            value: count.clone(),
            count: 0,
        })?;
        let min = env("SLURM_ARRAY_TASK_MIN")
            .and_then(|m| m.trim().parse().ok())
            .unwrap_or(0);
        return parse("SLURM_ARRAY_TASK_ID", id, min, count);
    }
    Err(ShardError::NoEngine)
}

/// What a merge knows of one shard's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardIdentity {
    /// Where the results are (for the error messages).
    pub dir: String,
    /// The shard, `None` for a run that was not sharded.
    pub shard: Option<ShardSpec>,
    /// [`crate::plan_hash`] of its plan.
    pub plan_hash: String,
}

/// Why shard results are not one whole run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no results to merge: name the shard directories")]
    Empty,
    /// A directory that holds an unsharded run.
    #[error("{0} is not a shard (it ran without --shard)")]
    NotSharded(String),
    /// Shards of different plans.
    #[error(
        "{dir} ran another plan than {first} (plan {hash} against {first_hash}): shards must share every setting, the seed and the server"
    )]
    OtherPlan {
        /// The odd one.
        dir: String,
        /// Its hash.
        hash: String,
        /// The first shard's directory.
        first: String,
        /// The first shard's hash.
        first_hash: String,
    },
    /// Shard counts that disagree.
    #[error("{dir} is shard {shard} but {first} is of {count} shards")]
    OtherCount {
        /// The odd one.
        dir: String,
        /// Its shard.
        shard: ShardSpec,
        /// The first shard's directory.
        first: String,
        /// The first shard's count.
        count: u32,
    },
    /// An index given twice.
    #[error("shard {index} is given twice: {a} and {b}")]
    Doubled {
        /// The index.
        index: u32,
        /// One directory.
        a: String,
        /// The other.
        b: String,
    },
    /// Indices missing.
    #[error("shards {missing:?} of {count} are missing: a merge needs every shard")]
    Missing {
        /// The missing indices.
        missing: Vec<u32>,
        /// The shard count.
        count: u32,
    },
}

/// Checks that `shards` are every shard of one plan, each once.
pub fn check_shards(shards: &[ShardIdentity]) -> Result<u32, MergeError> {
    let first = shards.first().ok_or(MergeError::Empty)?;
    let count = first
        .shard
        .ok_or_else(|| MergeError::NotSharded(first.dir.clone()))?
        .count;
    let mut seen: Vec<Option<&str>> = vec![None; count as usize];
    for s in shards {
        let spec = s
            .shard
            .ok_or_else(|| MergeError::NotSharded(s.dir.clone()))?;
        if s.plan_hash != first.plan_hash {
            return Err(MergeError::OtherPlan {
                dir: s.dir.clone(),
                hash: s.plan_hash.clone(),
                first: first.dir.clone(),
                first_hash: first.plan_hash.clone(),
            });
        }
        if spec.count != count {
            return Err(MergeError::OtherCount {
                dir: s.dir.clone(),
                shard: spec,
                first: first.dir.clone(),
                count,
            });
        }
        let slot = &mut seen[spec.index as usize];
        if let Some(a) = slot {
            return Err(MergeError::Doubled {
                index: spec.index,
                a: a.to_string(),
                b: s.dir.clone(),
            });
        }
        *slot = Some(&s.dir);
    }
    let missing: Vec<u32> = (0..count).filter(|i| seen[*i as usize].is_none()).collect();
    if missing.is_empty() {
        Ok(count)
    } else {
        Err(MergeError::Missing { missing, count })
    }
}

#[cfg(test)]
#[path = "tests/shard.rs"]
mod tests;
