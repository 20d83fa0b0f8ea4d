//! The fault proxy of `airlock_e2e::fault_proxy` on its own: the request head it sends
//! upstream, its error answer, and each fault against the real registry's `/v2/`.

mod tests {
    use airlock_e2e::fault_proxy::{ERROR_500, close_after_response};

    #[test]
    fn asks_the_upstream_to_close() {
        let head = "GET /v2/ HTTP/1.1\r\nHost: x\r\nconnection: keep-alive\r\nKeep-Alive: 5\r\n\r\n";
        assert_eq!(close_after_response(head), "GET /v2/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    }

    #[test]
    fn the_error_body_is_as_long_as_it_says() {
        let (head, body) = ERROR_500.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())), "{}", body.len());
    }
}

/// The proxy itself, against the real registry's `/v2/`.
mod live {
    use std::net::SocketAddr;

    use airlock_e2e::fault_proxy::Proxy;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// The whole response to `GET path`, or the error of the connection.
    async fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: registry\r\n\r\n").as_bytes()).await?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    #[tokio::test]
    async fn passes_answers_500_cuts_stops_and_resumes() {
        let proxy = Proxy::http(&airlock_e2e::service_env("AIRLOCK_REGISTRY")).await;
        let addr = proxy.addr();
        let whole = get(addr, "/v2/").await.expect("passed through");
        assert!(whole.starts_with("HTTP/1.1 200 ") && whole.contains("Connection: close"), "{whole}");

        proxy.answer_500("/v2/", 1);
        assert!(get(addr, "/v2/").await.unwrap().starts_with("HTTP/1.1 500 "));
        assert!(get(addr, "/v2/").await.unwrap().starts_with("HTTP/1.1 200 "), "only the next one");

        proxy.cut_response("/v2/", 10);
        assert_eq!(get(addr, "/v2/").await.unwrap(), whole[..10]);

        proxy.stop();
        assert!(TcpStream::connect(addr).await.is_err(), "a stopped proxy refuses connections");
        proxy.resume().await;
        assert!(get(addr, "/v2/").await.unwrap().starts_with("HTTP/1.1 200 "), "back on the same port");

        let events = proxy.events();
        let expected = [
            format!("GET /v2/: passed {} bytes", whole.len()),
            "GET /v2/: 500".to_string(),
            format!("GET /v2/: passed {} bytes", whole.len()),
            "GET /v2/: cut after 10 bytes".to_string(),
            "stopped: stopped by the test".to_string(),
            format!("resumed on {addr}"),
            format!("GET /v2/: passed {} bytes", whole.len()),
        ];
        assert_eq!(events, expected);
    }
}
