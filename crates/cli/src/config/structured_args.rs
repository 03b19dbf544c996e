//! The structured-output flags of `run` (`--response-format`, `--tools`, `--tool-choice`),
//! flattened into `RunArgs` and its config file, and read into the run's
//! `llmib_core::StructuredSpec` (docs/structured-output.md): the files are read and checked
//! here, before anything is sent.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use llmib_core::{ResponseFormat, StructuredSpec, ToolChoice};
use serde::Deserialize;

/// The structured-output flags of `run` (and keys of its config file), flattened into
/// `RunArgs`.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct StructuredArgs {
    /// Every request asks for structured output: `json_schema:FILE` (a JSON Schema file; the
    /// answers are checked against it and the rows count valid, invalid and cut answers) or
    /// `json_object`. Requests then end where the model closes the JSON (as with
    /// --respect-eos).
    #[arg(long, value_name = "json_schema:FILE|json_object")]
    pub response_format: Option<String>,
    /// Every request offers these function tools: a JSON array of OpenAI-style tools
    /// (`{"type": "function", "function": {"name", "description", "parameters"}}`); each call's
    /// arguments are checked against its tool's `parameters`.
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// Which tool calls the requests ask for: `auto` (the API's default), `required`, `none`,
    /// or a function's name (every answer calls it).
    #[arg(long, value_name = "auto|required|none|NAME")]
    pub tool_choice: Option<String>,
}

impl StructuredArgs {
    /// Field-wise merge, as `RunArgs::or`: every value set here wins over `lower`'s.
    pub fn or(self, lower: StructuredArgs) -> StructuredArgs {
        StructuredArgs {
            response_format: self.response_format.or(lower.response_format),
            tools: self.tools.or(lower.tools),
            tool_choice: self.tool_choice.or(lower.tool_choice),
        }
    }

    /// Whether any of the flags is given.
    pub fn given(&self) -> bool {
        self.response_format.is_some() || self.tools.is_some() || self.tool_choice.is_some()
    }

    /// Reads and checks the flags' files into the run's spec (`None` without any flag);
    /// `extra` is `--extra-body`'s object, which may not set the keys these flags set.
    pub fn spec(
        &self,
        extra: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Result<Option<StructuredSpec>> {
        if !self.given() {
            return Ok(None);
        }
        let response_format = self.response_format.as_deref().map(format_of).transpose()?;
        let (tools, tools_sha256) = match &self.tools {
            Some(path) => {
                let bytes = read(path, "--tools")?;
                let tools = StructuredSpec::tools_of(&path.display().to_string(), &bytes)?;
                (tools, Some(llmib_core::hex_sha256(&bytes)))
            }
            None => (Vec::new(), None),
        };
        let spec = StructuredSpec {
            response_format,
            tools,
            tools_sha256,
            tool_choice: self.tool_choice.as_deref().map(ToolChoice::parse),
        };
        spec.check_choice()?;
        spec.clash(extra)?;
        Ok(Some(spec))
    }
}

/// `json_object`, or `json_schema:FILE` read and checked.
fn format_of(v: &str) -> Result<ResponseFormat> {
    if v == "json_object" {
        return Ok(ResponseFormat::JsonObject);
    }
    let Some(file) = v.strip_prefix("json_schema:").filter(|f| !f.is_empty()) else {
        bail!("--response-format takes json_schema:FILE or json_object, not `{v}`");
    };
    let path = Path::new(file);
    let bytes = read(path, "--response-format")?;
    let stem = path
        .file_stem()
        .map_or("schema".into(), |s| s.to_string_lossy());
    Ok(StructuredSpec::schema_format(file, &stem, &bytes)?)
}

fn read(path: &Path, flag: &str) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("{flag}: cannot read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("llmib-structured-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    #[test]
    fn the_files_are_read_checked_and_hashed() {
        let schema = file("city.json", r#"{"type":"object","required":["city"]}"#);
        let tools = file("tools.json", r#"[{"name":"get_weather"}]"#);
        let a = StructuredArgs {
            response_format: Some(format!("json_schema:{}", schema.display())),
            tools: Some(tools.clone()),
            tool_choice: Some("get_weather".into()),
        };
        let s = a.spec(None).expect("ok").expect("some");
        let Some(ResponseFormat::JsonSchema { name, sha256, .. }) = &s.response_format else {
            panic!("schema")
        };
        assert_eq!(name, "city");
        assert_eq!(sha256.len(), 64);
        assert_eq!(s.tools[0].name, "get_weather");
        assert_eq!(
            s.tool_choice,
            Some(ToolChoice::Function("get_weather".into()))
        );
        assert_eq!(StructuredArgs::default().spec(None).expect("none"), None);
        let err = |a: StructuredArgs| a.spec(None).expect_err("refused").to_string();
        let wrong = StructuredArgs {
            tool_choice: Some("get_time".into()),
            ..a.clone()
        };
        assert!(err(wrong).contains("`get_time` names no tool"));
        let missing = StructuredArgs {
            tools: Some(PathBuf::from("/nonexistent/tools.json")),
            ..Default::default()
        };
        assert!(err(missing).starts_with("--tools: cannot read /nonexistent/tools.json"));
        let word = StructuredArgs {
            response_format: Some("yaml".into()),
            ..Default::default()
        };
        assert!(err(word).contains("json_schema:FILE or json_object"));
        let not_json = file("bad.json", "{");
        let bad = StructuredArgs {
            response_format: Some(format!("json_schema:{}", not_json.display())),
            ..Default::default()
        };
        assert!(err(bad).contains("not JSON"));
        let mut extra = serde_json::Map::new();
        extra.insert("response_format".into(), serde_json::json!({}));
        let clash = a.spec(Some(&extra)).expect_err("clash").to_string();
        assert!(clash.starts_with("--extra-body may not set `response_format`"));
    }

    #[test]
    fn a_config_file_names_the_files() {
        let a: StructuredArgs = toml::from_str(
            "response_format = \"json_object\"\ntools = \"t.json\"\ntool_choice = \"required\"",
        )
        .expect("parses");
        assert_eq!(a.response_format.as_deref(), Some("json_object"));
        assert_eq!(a.tools, Some(PathBuf::from("t.json")));
        assert_eq!(a.tool_choice.as_deref(), Some("required"));
    }
}
