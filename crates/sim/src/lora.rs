//! LoRA adapters served beside the base model (`lora_adapters`), as one base model with many
//! adapters is commonly deployed: which adapter a request's `model` names, the `/v1/models`
//! card of each adapter, and the rule that prices a decode step holding several adapters
//! (`lora_switch_ms`).
//!
//! Each engine names an adapter its own way, and the simulator follows both:
//! - **vLLM**: `model` is the adapter's name (`--lora-modules a=/path`); the answer echoes it,
//!   and any name that is neither the base model nor an adapter is a 404 (`NotFoundError`).
//! - **SGLang**: the OpenAI routes take `model: "base:adapter"` (SGLang splits at the first
//!   `:`; the base part is not checked) and echo the model as sent. A bare name, an adapter's
//!   included, is served by the base model as SGLang does; a `base:name` whose name is no
//!   adapter is refused with a 400 (only when adapters are configured, so that a plain model
//!   name with a colon keeps working without them).
//!
//! The cost rule is deliberately simple, so a test can compute it by hand: a decode step takes
//! `lora_switch_ms` more for each distinct adapter among the requests of its batch (requests on
//! the base model add nothing), the price of gathering each adapter's weights in a batched
//! LoRA kernel (Punica, S-LoRA). Prefill passes are not charged.

use serde_json::{Value, json};

use crate::config::{Flavor, SimConfig};

/// The index in `lora_adapters` of the adapter that serves a request whose answer echoes
/// `model` (`None`: the base model). vLLM echoes the adapter's name; SGLang the `base:adapter`
/// it was sent.
pub(crate) fn adapter_of(cfg: &SimConfig, model: &str) -> Option<u16> {
    let name = match cfg.flavor {
        Flavor::Vllm => model,
        Flavor::Sglang => model.split_once(':')?.1,
    };
    let i = cfg.lora_adapters.iter().position(|a| a == name)?;
    u16::try_from(i).ok()
}

/// Whether vLLM serves `asked`: the base model or one of its adapters.
pub(crate) fn vllm_serves(cfg: &SimConfig, asked: &str) -> bool {
    asked == cfg.model || cfg.lora_adapters.iter().any(|a| a == asked)
}

/// SGLang's `base:name` naming no adapter, when adapters are configured: the message of the
/// 400 it answers (`None`: the name is served).
pub(crate) fn sglang_refusal(cfg: &SimConfig, asked: Option<&str>) -> Option<String> {
    let named = asked.and_then(|m| m.split_once(':')).map(|(_, a)| a);
    match named {
        Some(a)
            if cfg.flavor == Flavor::Sglang
                && !cfg.lora_adapters.is_empty()
                && !cfg.lora_adapters.iter().any(|x| x == a) =>
        {
            Some(format!(
                "LoRA adapter `{a}` is not loaded; loaded adapters: {}",
                cfg.lora_adapters.join(", ")
            ))
        }
        _ => None,
    }
}

/// The `/v1/models` card of each adapter, after the base model's, as both engines list them:
/// `parent` the base model, `root` the adapter's path (here its name), no `max_model_len`;
/// `permission` where the flavour lists one (`perm`).
pub(crate) fn cards(
    cfg: &SimConfig,
    created: u64,
    perm: Option<&Value>,
) -> Vec<Vec<(&'static str, Value)>> {
    cfg.lora_adapters
        .iter()
        .map(|name| {
            let mut card = vec![
                ("id", json!(name)),
                ("object", json!("model")),
                ("created", json!(created)),
                ("owned_by", json!(cfg.flavor.as_str())),
                ("root", json!(name)),
                ("parent", json!(cfg.model)),
                ("max_model_len", Value::Null),
            ];
            if let Some(p) = perm {
                card.push(("permission", p.clone()));
            }
            card
        })
        .collect()
}

/// How many distinct adapters the requests of a batch use (`None`: the base model, not one).
pub(crate) fn distinct(adapters: impl Iterator<Item = Option<u16>>) -> u32 {
    let mut seen: Vec<u16> = adapters.flatten().collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len() as u32
}

/// The extra time of a decode step whose batch holds `adapters` distinct adapters, ms.
pub(crate) fn switch_ms(cfg: &SimConfig, adapters: u32) -> f64 {
    cfg.lora_switch_ms * f64::from(adapters)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(flavor: Flavor) -> SimConfig {
        SimConfig {
            flavor,
            lora_adapters: vec!["a".into(), "b".into()],
            lora_switch_ms: 2.5,
            ..SimConfig::default()
        }
    }

    #[test]
    fn each_flavour_names_adapters_its_own_way() {
        let v = cfg(Flavor::Vllm);
        assert_eq!(adapter_of(&v, "a"), Some(0));
        assert_eq!(adapter_of(&v, "b"), Some(1));
        assert_eq!(adapter_of(&v, &v.model), None);
        assert!(vllm_serves(&v, "b") && vllm_serves(&v, &v.model) && !vllm_serves(&v, "c"));
        let s = cfg(Flavor::Sglang);
        assert_eq!(adapter_of(&s, "sim/tiny:b"), Some(1));
        assert_eq!(adapter_of(&s, "anything:a"), Some(0));
        // A bare name is the base model on SGLang's OpenAI routes.
        assert_eq!(adapter_of(&s, "a"), None);
        assert_eq!(sglang_refusal(&s, Some("sim/tiny:a")), None);
        let e = sglang_refusal(&s, Some("sim/tiny:c")).expect("unknown adapter");
        assert!(e.contains("`c`") && e.contains("a, b"), "{e}");
        // Without adapters a colon in a model name means nothing.
        let plain = SimConfig::default();
        assert_eq!(sglang_refusal(&plain, Some("llama3:8b")), None);
    }

    /// The rule's known answers: 2.5 ms per distinct adapter, base-model requests free.
    #[test]
    fn a_step_pays_per_distinct_adapter() {
        let c = cfg(Flavor::Vllm);
        let batch = [Some(0), None, Some(1), Some(0), None];
        assert_eq!(distinct(batch.into_iter()), 2);
        assert_eq!(switch_ms(&c, distinct(batch.into_iter())), 5.0);
        assert_eq!(distinct([None, None].into_iter()), 0);
        assert_eq!(switch_ms(&c, 0), 0.0);
        assert_eq!(switch_ms(&c, 3), 7.5);
    }

    #[test]
    fn bad_adapter_lists_are_refused() {
        for list in [
            vec!["a", "a"],
            vec!["x:y"],
            vec![""],
            vec!["sim/tiny"],
            vec!["a b"],
        ] {
            let c = SimConfig {
                lora_adapters: list.iter().map(|s| s.to_string()).collect(),
                ..SimConfig::default()
            };
            assert!(c.validate().is_err(), "{list:?}");
        }
        let c = SimConfig {
            lora_switch_ms: -1.0,
            ..SimConfig::default()
        };
        assert!(c.validate().is_err());
    }
}
