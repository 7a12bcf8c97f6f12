//! The clients [`builder`] makes, against real loopback servers: plain HTTP reads no root,
//! and a TLS server is checked by the roots the first handshake loads.
//!
//! `testdata/` holds a test CA and a server certificate it signed for `127.0.0.1` and
//! `localhost` (P-256, valid until 2126), made once with openssl:
//! `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500
//! -subj "/CN=dsh test CA" -addext basicConstraints=critical,CA:TRUE ...`, then a leaf key
//! and CSR signed by it with `subjectAltName=IP:127.0.0.1,DNS:localhost` and
//! `extendedKeyUsage=serverAuth`, all converted to DER. The key is a test key: nothing
//! trusts the CA outside these tests.

use super::*;
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};

const CA: &[u8] = include_bytes!("../testdata/ca.der");
const SERVER_CERT: &[u8] = include_bytes!("../testdata/server.der");
const SERVER_KEY: &[u8] = include_bytes!("../testdata/server-key.der");

/// Answers one request on `listener` with `200 ok`, over TLS when `tls` is given.
fn serve_once(listener: TcpListener, tls: Option<Arc<rustls::ServerConfig>>) {
    std::thread::spawn(move || {
        let Ok((tcp, _)) = listener.accept() else {
            return;
        };
        let answer = |stream: &mut dyn ReadWrite| {
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
            let _ = stream.flush();
        };
        match tls {
            None => answer(&mut { tcp }),
            Some(config) => {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut stream = rustls::StreamOwned::new(conn, tcp);
                answer(&mut stream);
                stream.conn.send_close_notify();
                let _ = stream.flush();
            }
        }
    });
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

fn server_config() -> Arc<rustls::ServerConfig> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(SERVER_KEY.to_vec()));
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(SERVER_CERT.to_vec())], key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

fn get(client: &reqwest::Client, url: String) -> Result<String, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = client.get(url).send().await.map_err(|e| chain(&e))?;
        response.text().await.map_err(|e| chain(&e))
    })
}

/// An error with its sources, where reqwest keeps the TLS reason.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(next) = source {
        text.push_str(": ");
        text.push_str(&next.to_string());
        source = next.source();
    }
    text
}

static TEST_CA_LOADS: AtomicUsize = AtomicUsize::new(0);

/// Roots holding only the test CA, counting how often they are loaded.
fn test_ca(provider: Arc<CryptoProvider>) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
    TEST_CA_LOADS.fetch_add(1, Ordering::SeqCst);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(CA.to_vec()))?;
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map(|v| v as Arc<dyn ServerCertVerifier>)
        .map_err(|e| rustls::Error::General(e.to_string()))
}

#[test]
fn a_plain_http_client_reads_no_roots() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    serve_once(listener, None);
    // Its own verifier: another test here loads the shared one.
    let roots = Arc::new(LazyRoots::new(provider(), platform_verifier));
    let client = builder_verified_by(roots.clone())
        .no_proxy()
        .build()
        .unwrap();
    assert_eq!(get(&client, url), Ok("ok".to_owned()));
    assert!(!roots.is_loaded());
}

#[test]
fn the_first_handshake_loads_the_roots_once_and_they_check_the_server() {
    let roots = Arc::new(LazyRoots::new(provider(), test_ca));
    let client = builder_verified_by(roots.clone())
        .no_proxy()
        .build()
        .unwrap();
    assert!(!roots.is_loaded(), "building the client read the roots");
    assert_eq!(TEST_CA_LOADS.load(Ordering::SeqCst), 0);
    for host in ["127.0.0.1", "localhost"] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        serve_once(listener, Some(server_config()));
        assert_eq!(
            get(&client, format!("https://{host}:{port}/")),
            Ok("ok".into())
        );
    }
    assert!(roots.is_loaded());
    assert_eq!(TEST_CA_LOADS.load(Ordering::SeqCst), 1);
}

#[test]
fn a_server_the_roots_do_not_vouch_for_is_refused() {
    // The shared verifier of the system roots, which do not hold the test CA.
    let client = builder().no_proxy().build().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}/", listener.local_addr().unwrap());
    serve_once(listener, Some(server_config()));
    let error = get(&client, url).unwrap_err();
    assert!(
        error.contains("invalid peer certificate") || error.contains("No CA certificates"),
        "{error}"
    );
}

#[test]
fn a_failure_to_load_the_roots_is_kept_and_reported_by_every_check() {
    static LOADS: AtomicUsize = AtomicUsize::new(0);
    fn no_roots(_: Arc<CryptoProvider>) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
        LOADS.fetch_add(1, Ordering::SeqCst);
        Err(rustls::Error::General("no roots here".into()))
    }
    let provider = provider();
    let roots = LazyRoots::new(provider.clone(), no_roots);
    assert_eq!(
        roots.supported_verify_schemes(),
        provider
            .signature_verification_algorithms
            .supported_schemes()
    );
    assert!(!roots.is_loaded());
    let name = ServerName::try_from("localhost").unwrap();
    let cert = CertificateDer::from(SERVER_CERT.to_vec());
    for _ in 0..2 {
        let error = roots
            .verify_server_cert(&cert, &[], &name, &[], UnixTime::now())
            .unwrap_err();
        assert_eq!(error, rustls::Error::General("no roots here".into()));
    }
    assert_eq!(LOADS.load(Ordering::SeqCst), 1);
}
