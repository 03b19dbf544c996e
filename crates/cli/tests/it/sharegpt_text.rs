//! `--workload sharegpt-text:FILE` (issue 45, "Datasets with their text"), end to end against
//! the simulator: ShareGPT's first human messages are sent with their recorded words on a rate
//! cell (read from the request bodies as they left the tool, through `prompt_text`'s relay),
//! each asking as many tokens as its recorded reply has by the server's tokenizer; each
//! request's prompt length is the simulator's own count of that body (its per-request record),
//! the row summarises exactly those counts and says they are the server's, and run.json and the
//! report name the source. `sharegpt:FILE`, the length-only form, still sends filler.

use crate::common::*;
use crate::prompt_text::Relay;
use crate::prompts_workload::{
    assert_summarises, cell_bodies, last_counted, run_prompts, served, sim_chat_tokens, sim_tokens,
    stamped_tiny,
};
use serde_json::{Value, json};

/// Four conversations with a usable first pair (one opens with a system turn, one carries a
/// later turn that is never sent), and two without (a reply that is white space, no reply).
const SHAREGPT: &str = r#"[
 {"id": "c1", "conversations": [{"from": "human", "value": "Write a haiku about the sea."}, {"from": "gpt", "value": "Waves fold into foam, salt wind combs the quiet dunes"}, {"from": "human", "value": "never sent"}]},
 {"id": "c2", "conversations": [{"from": "system", "value": "be kind"}, {"from": "human", "value": "Name three rivers in Europe, please."}, {"from": "gpt", "value": "Danube, Rhine, Seine."}]},
 {"id": "c3", "conversations": [{"from": "human", "value": "   "}, {"from": "gpt", "value": "   "}]},
 {"id": "c4", "conversations": [{"from": "user", "value": "Explain, in one sentence, why the sky is blue."}, {"from": "assistant", "value": "Air scatters short blue wavelengths of sunlight more than the longer red ones, so the sky looks blue"}]},
 {"id": "c5", "conversations": [{"from": "human", "value": "lonely"}]},
 {"id": "c6", "conversations": [{"from": "human", "value": "Translate good morning into French."}, {"from": "gpt", "value": "Bonjour."}]}
]"#;

/// The usable pairs: (human message, recorded reply).
fn pairs() -> Vec<(String, String)> {
    let all: Vec<Value> = serde_json::from_str(SHAREGPT).expect("JSON");
    all.iter()
        .filter_map(|c| {
            let turns = c["conversations"].as_array()?;
            let i = turns
                .iter()
                .position(|t| t["from"] == "human" || t["from"] == "user")?;
            let (ask, reply) = (
                turns[i]["value"].as_str()?,
                turns.get(i + 1)?["value"].as_str()?,
            );
            (!ask.trim().is_empty() && !reply.trim().is_empty())
                .then(|| (ask.to_string(), reply.to_string()))
        })
        .collect()
}

/// The words: every body is one user message holding a recorded human message as written,
/// asking the simulator's count of its recorded reply; the simulator counted each body's text
/// and the row's input side is exactly those counts, marked as the server's; run.json records
/// the file (name, prompts, size, sha256), and the report names the source.
#[test]
fn sharegpt_words_are_the_bodies_text_counted_by_the_server() {
    let _serial = timing_lock();
    let sim = stamped_tiny();
    let relay = Relay::start(&sim.url);
    let dir = out_dir("sharegpt-text");
    let file = dir.join("sg.json");
    std::fs::write(&file, SHAREGPT).expect("write");
    let workload = format!("sharegpt-text:{}", file.display());
    let run = dir.join("run");
    let row = &run_prompts(&relay.url, &run, &workload, &["--api", "chat"])
        .ok()
        .one("rate");
    assert_eq!(row["status"], "valid", "{row:#}");
    assert_eq!(row["context_label"], "sharegpt-text:sg.json", "{row:#}");
    let n = row["requests_sent"].as_u64().expect("sent") as usize;
    assert!(n >= 5, "{row:#}");

    let pairs = pairs();
    assert_eq!(pairs.len(), 4);
    let bodies = cell_bodies(&relay);
    assert_eq!(bodies.len(), n, "one body per request sent");
    let mut expected = Vec::new();
    let mut asked = Vec::new();
    let mut used = std::collections::BTreeSet::new();
    for b in &bodies {
        let i = pairs
            .iter()
            .position(|(ask, _)| b["messages"] == json!([{"role": "user", "content": ask}]))
            .unwrap_or_else(|| panic!("a body that is not a recorded human message: {b:#}"));
        let reply_tokens = sim_tokens(&pairs[i].1);
        assert_eq!(b["max_tokens"], reply_tokens, "the reply's length: {b:#}");
        used.insert(i);
        expected.push(sim_chat_tokens(&b["messages"]));
        asked.push(reply_tokens);
    }
    assert!(used.len() >= 3, "a sample of the conversations: {used:?}");

    // Each request's length is the server's count of the body's text.
    let counted = last_counted(&sim, n);
    expected.sort_unstable();
    assert_eq!(counted, expected, "the simulator counted the bodies' texts");

    // The row summarises those counts, says they are the server's, and the lengths asked.
    let wf = &row["rate"]["workload"];
    assert_eq!(wf["source"], workload.as_str(), "{wf:#}");
    let input = &wf["input"];
    assert!(
        input["requested"]
            .as_str()
            .is_some_and(|r| r.ends_with("counted by the server")),
        "{input:#}"
    );
    assert_summarises(input, &counted);
    asked.sort_unstable();
    assert_eq!(
        (&wf["output"]["min"], &wf["output"]["max"]),
        (&json!(asked[0]), &json!(asked[n - 1])),
        "{wf:#}"
    );
    assert_eq!(row["prompt_check"]["mismatched"], 0, "{row:#}");

    // run.json: the source and the file, none of its text; the report names the source.
    let load = &run_json(&run)["plan"]["settings"]["load"];
    assert_eq!(load["workload"], workload.as_str());
    assert_eq!(load["prompts"]["name"], "sg.json");
    assert_eq!(load["prompts"]["lines"], 4, "the usable conversations");
    assert_eq!(
        load["prompts"]["sha256"],
        crate::datasets::sha(SHAREGPT.as_bytes())
    );
    let saved = std::fs::read_to_string(run.join("run.json")).expect("run.json");
    assert!(
        !saved.contains("haiku") && !saved.contains("Danube"),
        "no text"
    );
    let d = run.to_str().unwrap_or_default();
    let o = run_bin(&["report", d, "--format", "md"]);
    assert!(o.status.success(), "{}", text(&o));
    let md = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(md.contains("sharegpt-text:"), "the report names the source");
}

/// `sharegpt:FILE` keeps its meaning: the lengths of the recorded messages, sent as filler (no
/// recorded word in any body; completions, where a filler prompt of any length can be built).
#[test]
fn sharegpt_lengths_still_send_filler() {
    let _serial = timing_lock();
    let sim = stamped_tiny();
    let relay = Relay::start(&sim.url);
    let dir = out_dir("sharegpt-lengths");
    let file = dir.join("sg.json");
    std::fs::write(&file, SHAREGPT).expect("write");
    let workload = format!("sharegpt:{}", file.display());
    run_prompts(
        &relay.url,
        &dir.join("run"),
        &workload,
        &["--api", "completions"],
    )
    .ok();
    let bodies: Vec<Value> = relay
        .json_requests()
        .into_iter()
        .filter(|(line, _)| line.starts_with("POST /v1/completions"))
        .map(|(_, v)| v)
        .collect();
    assert!(!bodies.is_empty());
    for b in &bodies {
        let sent = b["prompt"].to_string();
        for (ask, _) in pairs() {
            assert!(!sent.contains(&ask), "lengths only: {b:#}");
        }
    }
}

/// A file that is not ShareGPT JSON is refused with exit 1, in one line naming the file and the
/// line, before any request reaches the server.
#[test]
fn a_bad_sharegpt_text_file_is_refused_by_line_before_anything_is_sent() {
    let sim = stamped_tiny();
    let dir = out_dir("sharegpt-text-bad");
    let file = dir.join("bad.json");
    std::fs::write(&file, "[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]},\n {\"conversations\": 7}\n]").expect("write");
    let out = dir.join("run");
    let workload = format!("sharegpt-text:{}", file.display());
    let line = run_prompts(&sim.url, &out, &workload, &["--api", "chat"])
        .go()
        .refusal();
    assert!(line.contains("bad.json:3: not ShareGPT JSON"), "{line}");
    assert!(!out.join("cells.jsonl").exists(), "nothing run");
    assert!(served(&sim).is_empty(), "no request reached the server");
}
