//! Images on a generation body (`run --images`; docs/images.md): the last user message's
//! content becomes parts, its text then its images on chat and Responses, its images then
//! its text on Anthropic's Messages (as Anthropic's docs advise), each in its API's shape:
//! - chat: `{"type": "text", "text": …}`, `{"type": "image_url", "image_url": {"url": "data:image/png;base64,…"}}`
//!   (`image/jpeg` for JPEGs, here and below);
//! - Messages: `{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": …}}`, `{"type": "text", "text": …}`;
//! - Responses: `{"type": "input_text", "text": …}`, `{"type": "input_image", "image_url": "data:…"}`.
//!
//! Completions has no place for an image: such a body is refused (the run refuses the
//! combination before anything is sent).

use std::sync::Arc;

use serde_json::{Value, json};

use llmib_core::Api;

/// One image a request carries, base64-encoded (built before the request is timed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePart {
    /// The file in standard base64.
    pub base64: Arc<str>,
    /// Its MIME type (`image/png`, `image/jpeg`), as its data URL and `media_type` say.
    pub media_type: &'static str,
}

/// Why a body cannot carry its images.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageBodyError {
    /// Completions take a text, not content parts.
    #[error("images need a chat, messages or responses API, not completions")]
    Completions,
    /// The body has no user message.
    #[error("no user message to put the images in")]
    NoUserMessage,
}

/// Puts `images` in `body`'s last user message (nothing to do without images).
pub(crate) fn attach(
    api: Api,
    body: &mut Value,
    images: &[ImagePart],
) -> Result<(), ImageBodyError> {
    if images.is_empty() {
        return Ok(());
    }
    let key = match api {
        Api::Chat | Api::Messages => "messages",
        Api::Responses => "input",
        Api::Completions => {
            return Err(ImageBodyError::Completions);
        }
    };
    let user = body
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .and_then(|m| {
            m.iter_mut()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        })
        .ok_or(ImageBodyError::NoUserMessage)?;
    let text = match user.get("content") {
        Some(Value::String(s)) => vec![text_part(api, s)],
        Some(Value::Array(parts)) => parts.clone(),
        _ => Vec::new(),
    };
    let pictures = images.iter().map(|i| image_part(api, i));
    let parts: Vec<Value> = if api == Api::Messages {
        pictures.chain(text).collect()
    } else {
        text.into_iter().chain(pictures).collect()
    };
    user["content"] = Value::Array(parts);
    Ok(())
}

/// A text part in `api`'s shape.
fn text_part(api: Api, text: &str) -> Value {
    let kind = if api == Api::Responses {
        "input_text"
    } else {
        "text"
    };
    json!({"type": kind, "text": text})
}

/// An image part in `api`'s shape.
fn image_part(api: Api, image: &ImagePart) -> Value {
    let (b64, media) = (&*image.base64, image.media_type);
    let url = || format!("data:{media};base64,{b64}");
    match api {
        Api::Messages => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media, "data": b64},
        }),
        Api::Responses => json!({"type": "input_image", "image_url": url()}),
        Api::Chat | Api::Completions => {
            json!({"type": "image_url", "image_url": {"url": url()}})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn img(s: &str) -> ImagePart {
        ImagePart {
            base64: Arc::from(s),
            media_type: "image/png",
        }
    }

    #[test]
    fn each_api_gets_its_own_shapes_in_the_last_user_message() {
        let two = [img("AAAA"), img("BBBB")];
        let mut chat = json!({"messages": [{"role": "user", "content": "hi"}]});
        attach(Api::Chat, &mut chat, &two).expect("chat");
        assert_eq!(
            chat["messages"][0]["content"],
            json!([
                {"type": "text", "text": "hi"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}},
            ])
        );
        let mut msgs = json!({"messages": [{"role": "user", "content": "hi"}]});
        attach(Api::Messages, &mut msgs, &two[..1]).expect("messages");
        assert_eq!(
            msgs["messages"][0]["content"],
            json!([
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                {"type": "text", "text": "hi"},
            ])
        );
        let mut resp = json!({"input": [{"role": "user", "content": "a"},
                                        {"role": "assistant", "content": "b"},
                                        {"role": "user", "content": "c"}]});
        attach(Api::Responses, &mut resp, &two[..1]).expect("responses");
        assert_eq!(resp["input"][0]["content"], "a");
        assert_eq!(
            resp["input"][2]["content"],
            json!([
                {"type": "input_text", "text": "c"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            ])
        );
        // A JPEG says so in its data URL and its media type.
        let jpeg = [ImagePart {
            base64: Arc::from("/9j/"),
            media_type: "image/jpeg",
        }];
        let mut chat = json!({"messages": [{"role": "user", "content": "hi"}]});
        attach(Api::Chat, &mut chat, &jpeg).expect("chat");
        assert_eq!(
            chat["messages"][0]["content"][1]["image_url"]["url"],
            "data:image/jpeg;base64,/9j/"
        );
        let mut msgs = json!({"messages": [{"role": "user", "content": "hi"}]});
        attach(Api::Messages, &mut msgs, &jpeg).expect("messages");
        assert_eq!(
            msgs["messages"][0]["content"][0]["source"]["media_type"],
            "image/jpeg"
        );
    }

    #[test]
    fn completions_and_a_body_without_a_user_message_are_refused() {
        let mut b = json!({"prompt": "hi"});
        let e = attach(Api::Completions, &mut b, &[img("A")]).expect_err("completions");
        assert!(e.to_string().contains("not completions"), "{e}");
        let mut b = json!({"messages": [{"role": "system", "content": "x"}]});
        assert!(attach(Api::Chat, &mut b, &[img("A")]).is_err());
        // No images: the body is left as it was, whatever the API.
        let mut b = json!({"prompt": "hi"});
        attach(Api::Completions, &mut b, &[]).expect("nothing to do");
        assert_eq!(b, json!({"prompt": "hi"}));
    }
}
