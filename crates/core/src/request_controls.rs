//! What every generation request carries beyond the tool's own keys (`--temperature`,
//! `--top-p`, `--seed`, `--extra-body`), and the keys the tool keeps for itself because each
//! one changes what is measured. Part of the plan's settings; the client puts them into every
//! body.

use serde::{Deserialize, Serialize};

/// What every generation request carries beyond the tool's own keys: sampling, a server-side
/// seed, and engine-specific knobs (reasoning effort, chat template kwargs, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestControls {
    /// `temperature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// `top_p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// `seed` (the server's sampling seed, not the prompts').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Keys merged into every request body, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_body: Option<serde_json::Map<String, serde_json::Value>>,
    /// Forced-token decode (`--forced-token-id`): a logit bias of +100 on this token and
    /// temperature 0, so sampling is trivial and the decode path runs as fast as it can (a
    /// route diagnostic; EOS is ignored as always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced_token_id: Option<u32>,
    /// Structured output and tools (`--response-format`, `--tools`, `--tool-choice`;
    /// `crate::structured`), put into every body in the API's shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<crate::structured::StructuredSpec>,
}

/// The body keys the tool owns: `--extra-body` may not set them, since each one changes what
/// is measured (the prompt, its length, the output length, streaming, usage, the EOS rule).
pub const OWN_BODY_KEYS: [&str; 14] = [
    "model",
    "prompt",
    "messages",
    "system",
    "input",
    "instructions",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "stream",
    "stream_options",
    "ignore_eos",
    "min_tokens",
    "n",
];

/// Why `--extra-body` was refused.
#[derive(Debug, thiserror::Error)]
pub enum ExtraBodyError {
    /// The text is not JSON (serde's words say where).
    #[error(
        "--extra-body is not JSON ({0}): give an object, e.g. '{{\"reasoning_effort\":\"low\"}}'"
    )]
    NotJson(serde_json::Error),
    /// JSON, but not an object.
    #[error("--extra-body must be a JSON object, e.g. '{{\"top_k\":20}}'")]
    NotObject,
    /// The object sets one of the [`OWN_BODY_KEYS`].
    #[error(
        "--extra-body may not set `{0}`: the tool sets it to measure (use --max-output, --api or --respect-eos)"
    )]
    OwnKey(String),
}

/// A control the chosen API has no key for: refused before the run, never dropped silently.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{control} has no counterpart in the {api} API: drop it, or use --api chat (a server's own extension key can go in --extra-body)"
)]
pub struct ControlRefused {
    /// The flag.
    pub control: &'static str,
    /// The API's label.
    pub api: &'static str,
}

impl RequestControls {
    /// The first control that `api` cannot carry, if any: neither the Messages API nor the
    /// Responses API has a sampling `seed` or a `logit_bias` (which forced-token decode needs).
    /// Temperature and top-p exist in every API.
    /// Structured output and tools: see `StructuredSpec::refused_on`.
    pub fn refused_on(&self, api: crate::api::Api) -> Option<ControlRefused> {
        if let Some(crate::structured::StructuredError::Api { flag, .. }) =
            self.structured.as_ref().and_then(|s| s.refused_on(api))
        {
            return Some(ControlRefused {
                control: flag,
                api: api.label(),
            });
        }
        if !matches!(api, crate::api::Api::Messages | crate::api::Api::Responses) {
            return None;
        }
        let control = if self.seed.is_some() {
            "--seed"
        } else if self.forced_token_id.is_some() {
            "--forced-token-id"
        } else {
            return None;
        };
        Some(ControlRefused {
            control,
            api: api.label(),
        })
    }

    /// Nothing beyond the tool's own keys.
    pub fn is_empty(&self) -> bool {
        *self == RequestControls::default()
    }

    /// Reads `--extra-body`: a JSON object whose keys are not the tool's own.
    pub fn parse_extra_body(
        text: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, ExtraBodyError> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(ExtraBodyError::NotJson)?;
        let serde_json::Value::Object(map) = v else {
            return Err(ExtraBodyError::NotObject);
        };
        if let Some(k) = map.keys().find(|k| OWN_BODY_KEYS.contains(&k.as_str())) {
            return Err(ExtraBodyError::OwnKey(k.clone()));
        }
        Ok(map)
    }

    /// Puts the controls into a request body (an object).
    pub fn apply(&self, body: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(t) = self.temperature {
            body.insert("temperature".into(), serde_json::json!(t));
        }
        if let Some(p) = self.top_p {
            body.insert("top_p".into(), serde_json::json!(p));
        }
        if let Some(s) = self.seed {
            body.insert("seed".into(), serde_json::json!(s));
        }
        for (k, v) in self.extra_body.iter().flatten() {
            if !OWN_BODY_KEYS.contains(&k.as_str()) {
                body.insert(k.clone(), v.clone());
            }
        }
        // Last, so no other control undoes it: OpenAI's `logit_bias` maps token ids (as
        // strings) to a bias in [-100, 100]; +100 makes the token all but certain.
        if let Some(id) = self.forced_token_id {
            body.insert(
                "logit_bias".into(),
                serde_json::json!({ id.to_string(): 100 }),
            );
            body.insert("temperature".into(), serde_json::json!(0.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forced_token_overrides_sampling_and_biases_its_id() {
        let c = RequestControls {
            temperature: Some(0.7),
            forced_token_id: Some(1234),
            extra_body: Some(
                serde_json::from_str(r#"{"logit_bias":{"5":-3},"top_k":20}"#).expect("JSON"),
            ),
            ..RequestControls::default()
        };
        let mut body = serde_json::Map::new();
        c.apply(&mut body);
        assert_eq!(body["logit_bias"], serde_json::json!({"1234": 100}));
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["top_k"], 20);
        assert_eq!(c.refused_on(crate::api::Api::Chat), None);
        let refused = c
            .refused_on(crate::api::Api::Messages)
            .expect("no logit_bias");
        assert_eq!(refused.control, "--forced-token-id");
        let seeded = RequestControls {
            seed: Some(7),
            temperature: Some(0.5),
            ..RequestControls::default()
        };
        let refused = seeded
            .refused_on(crate::api::Api::Responses)
            .expect("no seed");
        assert!(
            refused
                .to_string()
                .contains("--seed has no counterpart in the responses API")
        );
        let plain = RequestControls {
            temperature: Some(0.5),
            top_p: Some(0.9),
            ..RequestControls::default()
        };
        assert_eq!(plain.refused_on(crate::api::Api::Messages), None);
        let mut plain = serde_json::Map::new();
        RequestControls::default().apply(&mut plain);
        assert!(plain.is_empty());
    }

    /// The flag's refusals keep the words they had as strings.
    #[test]
    fn extra_body_refusals_say_why() {
        let e = |t: &str| {
            RequestControls::parse_extra_body(t)
                .expect_err(t)
                .to_string()
        };
        assert!(
            e("{").starts_with("--extra-body is not JSON ("),
            "{}",
            e("{")
        );
        assert!(e("{").ends_with("): give an object, e.g. '{\"reasoning_effort\":\"low\"}'"));
        assert_eq!(
            e("[1]"),
            "--extra-body must be a JSON object, e.g. '{\"top_k\":20}'"
        );
        assert_eq!(
            e(r#"{"n":2}"#),
            "--extra-body may not set `n`: the tool sets it to measure (use --max-output, --api or --respect-eos)"
        );
        let ok = RequestControls::parse_extra_body(r#"{"top_k":20}"#).expect("an object");
        assert_eq!(ok["top_k"], 20);
    }
}
