//! RFC 7512 `pkcs11:` URIs naming the private key to sign with: the path's attributes
//! select the token and the object, the query names the module to load and where the PIN
//! is. Parsing only; `token` opens what a URI names.
//!
//! Every attribute this does not understand is refused, as RFC 7512 section 2.3 asks of
//! a consumer that could otherwise pick a key less specific than the one meant. The PIN
//! never reaches an error message nor the URI's `Display`.

use std::fmt;
use std::path::PathBuf;

/// Why a `pkcs11:` URI was refused; each names the attribute at fault and never its value
/// when that value is a PIN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UriError {
    #[error("not a pkcs11: URI")]
    NotPkcs11,
    #[error("pkcs11 URI attribute '{attribute}': {why}")]
    Attribute { attribute: String, why: String },
    #[error("pkcs11 URI attribute '{0}' is given twice")]
    Repeated(String),
    #[error("pkcs11 URI attribute '{0}' is not supported (RFC 7512 asks to refuse a URI with an attribute not understood)")]
    Unsupported(String),
    #[error("pkcs11 URI has no 'module-path': name the PKCS#11 module to load, e.g. ?module-path=/usr/lib/softhsm/libsofthsm2.so")]
    NoModule,
    #[error("pkcs11 URI selects no object: give 'object' (the key's label) or 'id'")]
    NoObject,
}

/// Where the PIN comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum Pin {
    /// None given: the token's own authentication path, or no login.
    Absent,
    /// `pin-value`, in the URI itself.
    Value(String),
    /// `pin-source`: a file whose content (less one trailing newline) is the PIN.
    File(PathBuf),
}

impl fmt::Debug for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pin::Absent => f.write_str("Absent"),
            Pin::Value(_) => f.write_str("Value(<hidden>)"),
            Pin::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

/// A parsed `pkcs11:` URI. Values are decoded; byte values (`id`) stay bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pkcs11Uri {
    pub token: Option<String>,
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub slot_id: Option<u64>,
    /// `object`: the key's `CKA_LABEL`.
    pub object: Option<String>,
    /// `id`: the key's `CKA_ID`.
    pub id: Option<Vec<u8>>,
    pub module_path: PathBuf,
    pub pin: Pin,
}

impl Pkcs11Uri {
    /// Parses `text`, which starts with `pkcs11:` (in any case).
    pub fn parse(text: &str) -> Result<Pkcs11Uri, UriError> {
        let rest = match text.get(..7) {
            Some(scheme) if scheme.eq_ignore_ascii_case("pkcs11:") => &text[7..],
            _ => return Err(UriError::NotPkcs11),
        };
        if rest.contains('#') {
            return Err(UriError::Attribute { attribute: "#".into(), why: "a pkcs11 URI has no fragment".into() });
        }
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut uri = Pkcs11Uri {
            token: None,
            manufacturer: None,
            model: None,
            serial: None,
            slot_id: None,
            object: None,
            id: None,
            module_path: PathBuf::new(),
            pin: Pin::Absent,
        };
        let mut seen: Vec<String> = Vec::new();
        for (name, raw) in attributes(path, ';')? {
            once(&mut seen, &name)?;
            let text = || decode_text(&name, raw);
            match name.as_str() {
                "token" => uri.token = Some(text()?),
                "manufacturer" => uri.manufacturer = Some(text()?),
                "model" => uri.model = Some(text()?),
                "serial" => uri.serial = Some(text()?),
                "object" => uri.object = Some(text()?),
                "id" => uri.id = Some(decode(&name, raw)?),
                "slot-id" => uri.slot_id = Some(text()?.parse().map_err(|_| bad(&name, "not a decimal slot number"))?),
                "type" if text()? == "private" => {}
                "type" => return Err(bad(&name, "the key that signs is a private key: give type=private or leave it out")),
                _ => return Err(UriError::Unsupported(name)),
            }
        }
        let mut module_path = None;
        for (name, raw) in attributes(query, '&')? {
            once(&mut seen, &name)?;
            match name.as_str() {
                "module-path" => module_path = Some(PathBuf::from(decode_text(&name, raw)?)),
                "pin-value" => uri.pin = Pin::Value(decode_text(&name, raw).map_err(|_| bad(&name, "not UTF-8 once decoded"))?),
                "pin-source" => uri.pin = Pin::File(pin_file(&decode_text(&name, raw)?)?),
                "module-name" => return Err(bad(&name, "give the module's file as module-path instead; no system path is searched")),
                _ => return Err(UriError::Unsupported(name)),
            }
        }
        if seen.iter().any(|n| n == "pin-value") && seen.iter().any(|n| n == "pin-source") {
            return Err(bad("pin-source", "give pin-value or pin-source, not both"));
        }
        uri.module_path = module_path.ok_or(UriError::NoModule)?;
        if !uri.module_path.is_absolute() {
            return Err(bad("module-path", "must be an absolute path"));
        }
        if uri.object.is_none() && uri.id.is_none() {
            return Err(UriError::NoObject);
        }
        Ok(uri)
    }

    /// The attributes that select the object, as in the URI: what an error names.
    pub fn object_attributes(&self) -> String {
        let mut parts = Vec::new();
        if let Some(object) = &self.object {
            parts.push(format!("object={}", encode(object.as_bytes())));
        }
        if let Some(id) = &self.id {
            parts.push(format!("id={}", id.iter().map(|b| format!("%{b:02X}")).collect::<String>()));
        }
        parts.join(";")
    }

    /// The attributes that select the token, as in the URI; empty when any token will do.
    pub fn token_attributes(&self) -> String {
        let mut parts = Vec::new();
        for (name, value) in
            [("token", &self.token), ("manufacturer", &self.manufacturer), ("model", &self.model), ("serial", &self.serial)]
        {
            if let Some(value) = value {
                parts.push(format!("{name}={}", encode(value.as_bytes())));
            }
        }
        if let Some(slot) = self.slot_id {
            parts.push(format!("slot-id={slot}"));
        }
        parts.join(";")
    }
}

/// The URI without its query: enough to say which key, nothing about the PIN.
impl fmt::Display for Pkcs11Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let token = self.token_attributes();
        let sep = if token.is_empty() { "" } else { ";" };
        write!(f, "pkcs11:{token}{sep}{}", self.object_attributes())
    }
}

fn bad(attribute: &str, why: &str) -> UriError {
    UriError::Attribute { attribute: attribute.to_string(), why: why.to_string() }
}

fn once(seen: &mut Vec<String>, name: &str) -> Result<(), UriError> {
    if seen.iter().any(|n| n == name) {
        return Err(UriError::Repeated(name.to_string()));
    }
    seen.push(name.to_string());
    Ok(())
}

/// The `name=value` pairs of one part, split on `sep`; names are lowercase ASCII.
fn attributes(part: &str, sep: char) -> Result<Vec<(String, &str)>, UriError> {
    let mut out = Vec::new();
    for pair in part.split(sep).filter(|p| !p.is_empty()) {
        let Some((name, value)) = pair.split_once('=') else {
            // A bare word in the query may be a PIN pasted without its name.
            let shown = if sep == ';' { pair.chars().take(32).collect() } else { format!("number {} of the query", out.len() + 1) };
            return Err(UriError::Attribute { attribute: shown, why: "has no '=value'".into() });
        };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
            return Err(UriError::Attribute { attribute: name.chars().take(32).collect(), why: "not an attribute name".into() });
        }
        out.push((name.to_string(), value));
    }
    Ok(out)
}

/// Percent-decodes `raw` (RFC 3986 section 2.1).
fn decode(name: &str, raw: &str) -> Result<Vec<u8>, UriError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
            out.push(hex.ok_or_else(|| bad(name, "a '%' not followed by two hex digits"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

fn decode_text(name: &str, raw: &str) -> Result<String, UriError> {
    String::from_utf8(decode(name, raw)?).map_err(|_| bad(name, "not UTF-8 once decoded"))
}

/// The file of a `pin-source`: a `file:` URI or a path.
fn pin_file(source: &str) -> Result<PathBuf, UriError> {
    let path = match source.strip_prefix("file://") {
        Some(rest) => rest.strip_prefix("localhost").unwrap_or(rest),
        None => source.strip_prefix("file:").unwrap_or(source),
    };
    if path.is_empty() || path.contains("://") {
        return Err(bad("pin-source", "give a file: URI or a path"));
    }
    Ok(PathBuf::from(path))
}

/// Percent-encodes what RFC 7512's `pk11-pchar` does not allow as is.
fn encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            b'a'..=b'z'
            | b'A'..=b'Z'
            | b'0'..=b'9'
            | b'-'
            | b'.'
            | b'_'
            | b'~'
            | b':'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b'='
            | b'&' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
#[path = "uri_tests.rs"]
mod tests;
