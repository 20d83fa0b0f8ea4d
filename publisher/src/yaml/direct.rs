//! JSON values straight from the YAML parser's events, for the plain YAML that makes up
//! nearly every manifest.
//!
//! serde_saphyr drives serde's visitors through a buffering event layer, which weighs on a
//! publish that parses the rendered templates of a large fleet. [`parse`] reads the
//! same parser's events (granit_parser, with the options serde_saphyr gives it) and builds
//! `serde_json::Value`s itself, resolving scalars with `scalar`. It answers only for
//! streams whose meaning it is sure of, and gives up (`None`) at anything else: a parse
//! error, a tag, an anchor or alias, a merge key `<<`, a non-scalar or null key, a
//! duplicate key, a `%YAML` directive, a non-finite number, or a stream close to a limit.
//! The caller then parses the stream with serde_saphyr, which has the last word on such
//! input and words the errors, so nothing the publisher accepts or refuses changes. Keys
//! and scalars are judged by the functions the line reader uses (`airlock_bundle::yaml`), so a
//! value means the same on either path.

use super::limits::MAX_FAST_PATH_BYTES;
use super::scalar::{self, checked_key};
use granit_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Value};

use super::limits::{MAX_DEPTH, MAX_DOCUMENTS};

/// Parser events in one stream: serde_saphyr's default budget allows 250,000 nodes and a
/// million events; a stream near that is left to it.
pub(super) const MAX_EVENTS: usize = 200_000;

/// A collection being built.
enum Open {
    Sequence(Vec<Value>),
    Mapping {
        map: Map<String, Value>,
        /// The key whose value comes next.
        key: Option<String>,
        /// Integers spelt by this mapping's plain keys: `1` and `0x1` are the same key.
        integers: Vec<(bool, u128)>,
    },
}

/// The stream's non-null documents, or `None` when serde_saphyr must decide.
pub(super) fn parse(text: &str) -> Option<Vec<Value>> {
    if text.len() > MAX_FAST_PATH_BYTES {
        return None;
    }
    let mut parser = Parser::new_from_str_with_options(text, parser_options());
    let (mut open, mut documents, mut events) = (Vec::<Open>::new(), Vec::new(), 0usize);
    let mut started = 0usize;
    while let Some(next) = parser.next_event() {
        let (event, _) = next.ok()?;
        events += 1;
        if events > MAX_EVENTS {
            return None;
        }
        let value = match event {
            Event::DocumentStart(_, version) => {
                started += 1;
                if version.is_some() || started >= MAX_DOCUMENTS {
                    return None;
                }
                continue;
            }
            Event::Scalar(text, style, anchor, tag) => {
                if anchor != 0 || tag.is_some() {
                    return None;
                }
                if let Some(Open::Mapping { map, key: key @ None, integers }) = open.last_mut() {
                    *key = Some(checked_key(&text, style == ScalarStyle::Plain, map, integers)?);
                    continue;
                }
                scalar::resolve(&text, style == ScalarStyle::Plain)?
            }
            Event::SequenceStart(_, anchor, ref tag) | Event::MappingStart(_, anchor, ref tag) => {
                let is_key = matches!(open.last(), Some(Open::Mapping { key: None, .. }));
                if anchor != 0 || tag.is_some() || is_key || open.len() + 1 >= MAX_DEPTH {
                    return None;
                }
                open.push(match event {
                    Event::SequenceStart(..) => Open::Sequence(Vec::new()),
                    _ => Open::Mapping { map: Map::new(), key: None, integers: Vec::new() },
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match open.pop()? {
                Open::Sequence(items) => Value::Array(items),
                Open::Mapping { map, .. } => Value::Object(map),
            },
            Event::Alias(_) | Event::UnresolvedAlias(_) | Event::Anchor(..) => return None,
            // Stream and document ends and comments carry nothing for a value.
            _ => continue,
        };
        match open.last_mut() {
            // A document that is empty or null is skipped, as serde_saphyr does.
            None if value.is_null() => {}
            None => documents.push(value),
            Some(Open::Sequence(items)) => items.push(value),
            Some(Open::Mapping { map, key, .. }) => {
                map.insert(key.take()?, value);
            }
        }
    }
    open.is_empty().then_some(documents)
}

/// The parser options serde_saphyr 2.2 uses with the publisher's `Options` (its default
/// budget, comments on): the same input must parse, or fail, the same way.
fn parser_options() -> granit_parser::Options {
    granit_parser::options! {
        strict_indentation: false,
        bom_inside_document_as_content: false,
        emit_comments: true,
        max_buffered_comment_events: 32,
        simple_key_max_lookahead: 1024,
        flow_nesting_limit: 255,
        block_nesting_limit: 255,
    }
}
