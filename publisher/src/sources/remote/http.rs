//! The HTTP side of a `remoteURL`: one client per fetch with the Secret's CA (or, without
//! one, `insecureSkipTLSVerify`), and [`Http::get`], which reads a body through a cap.
//! `http(s)://` URLs are one such GET; `oci` makes several.

use super::credentials::Credentials;
use super::error::RemoteError;
use super::limits::TIMEOUT;

/// A client for one `remoteURL`, and the URL as messages show it.
pub struct Http {
    pub client: reqwest::Client,
    pub shown: String,
}

impl Http {
    /// A client trusting the Secret's `caFile` when it has one (the system roots and
    /// `insecure` are then ignored, as Sveltos ignores `insecureSkipTLSVerify`), else the
    /// system roots, or nothing at all when `insecure`.
    pub fn new(shown: &str, credentials: &Credentials, insecure: bool) -> Result<Http, RemoteError> {
        let unavailable = |message: String| RemoteError::Unavailable { url: shown.into(), message };
        let mut builder = reqwest::Client::builder().connect_timeout(TIMEOUT).read_timeout(TIMEOUT);
        match &credentials.ca {
            Some(pem) => {
                let ca = reqwest::Certificate::from_pem(pem).map_err(|e| RemoteError::Malformed {
                    url: shown.into(),
                    what: "the Secret's caFile".into(),
                    message: e.to_string(),
                })?;
                builder = builder.tls_certs_only([ca]);
            }
            None if insecure => builder = builder.tls_danger_accept_invalid_certs(true),
            None => {}
        }
        let client = builder.build().map_err(|e| unavailable(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Http { client, shown: shown.into() })
    }

    /// Sends `request` and reads the body, refused over `cap` bytes before and while
    /// reading; `what` names it in messages. A 404 is [`RemoteError::NotFound`]; a 401
    /// comes back as the response, whose challenge may ask for a token.
    pub async fn get(
        &self,
        request: reqwest::RequestBuilder,
        cap: u64,
        what: &str,
    ) -> Result<Result<Vec<u8>, reqwest::Response>, RemoteError> {
        let mut response = request.send().await.map_err(|e| self.unavailable(e))?;
        match response.status().as_u16() {
            200 => {}
            401 => return Ok(Err(response)),
            404 => return Err(RemoteError::NotFound { url: self.shown.clone() }),
            status => return Err(RemoteError::Status { url: self.shown.clone(), status }),
        }
        let too_large = || RemoteError::TooLarge { url: self.shown.clone(), what: what.into(), limit: cap };
        if response.content_length().is_some_and(|n| n > cap) {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.unavailable(e))? {
            if (bytes.len() + chunk.len()) as u64 > cap {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Ok(bytes))
    }

    /// [`Http::get`] where a 401 is an error too.
    pub async fn get_body(&self, request: reqwest::RequestBuilder, cap: u64, what: &str) -> Result<Vec<u8>, RemoteError> {
        self.get(request, cap, what).await?.map_err(|_| RemoteError::Status { url: self.shown.clone(), status: 401 })
    }

    fn unavailable(&self, e: reqwest::Error) -> RemoteError {
        // The error's own text repeats the URL, query string included.
        let e = e.without_url();
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            message.push_str(&format!(": {s}"));
            source = s.source();
        }
        RemoteError::Unavailable { url: self.shown.clone(), message }
    }
}
