//! The one way dsh builds HTTP clients: the model client, `web_fetch` and MCP's HTTP
//! transport all start from [`builder`].
//!
//! Two things every client needs, done once here:
//!
//! - **A crypto provider.** The workspace builds reqwest without its aws-lc-rs default (it
//!   needs a C toolchain; docs/mcp.md), so ring is installed as rustls's process-wide
//!   provider before any client is built.
//! - **System roots, read when they are first needed.** reqwest's own TLS setup reads the
//!   system's root certificates (the bundle, and every file of `$SSL_CERT_DIR` when that is
//!   set) while the client is *built*. That cost about 3 ms of CPU and wall time on every
//!   `dsh run` (measured with `perf stat` on a one-step run, docs/performance.md), on a
//!   plain-`http` endpoint that never uses them, and again on every `web_fetch`, which builds
//!   a client per fetch. Here the roots are read on the first TLS handshake of the process,
//!   by the same verifier reqwest uses (`rustls-platform-verifier`), and shared by every
//!   client after that. A root installed while dsh runs is therefore seen by the next
//!   process, not this one, as with most programs.
//!
//! The TLS settings are reqwest's defaults written out: TLS 1.2 and 1.3, SNI on, ALPN
//! offering `h2` then `http/1.1`. Because the TLS configuration is handed to reqwest ready
//! made, a caller must not ask for reqwest TLS options on the builder (extra roots, version
//! bounds, HTTP/1-only): they would be ignored. None does.

use std::fmt;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// `reqwest::Client::builder()` with ring installed and the system roots read on the first
/// TLS handshake (see the crate docs).
pub fn builder() -> reqwest::ClientBuilder {
    builder_verified_by(system_roots())
}

/// [`builder`] with server certificates checked by `verifier`.
fn builder_verified_by(verifier: Arc<dyn ServerCertVerifier>) -> reqwest::ClientBuilder {
    let provider = provider();
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|config| {
            let mut config = config
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            config
        });
    match config {
        Ok(config) => reqwest::Client::builder().tls_backend_preconfigured(config),
        // Not reachable with ring; reqwest's own setup (roots read now) still works.
        Err(_) => reqwest::Client::builder(),
    }
}

/// The process's rustls provider: ring, unless something installed another one first.
fn provider() -> Arc<CryptoProvider> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()))
}

/// The verifier every client of the process shares, so the roots are read at most once.
fn system_roots() -> Arc<LazyRoots> {
    static SHARED: OnceLock<Arc<LazyRoots>> = OnceLock::new();
    SHARED
        .get_or_init(|| Arc::new(LazyRoots::new(provider(), platform_verifier)))
        .clone()
}

fn platform_verifier(
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error> {
    Ok(Arc::new(rustls_platform_verifier::Verifier::new(provider)?))
}

/// Builds the verifier that holds the roots.
type LoadRoots = fn(Arc<CryptoProvider>) -> Result<Arc<dyn ServerCertVerifier>, rustls::Error>;

/// A certificate verifier whose roots are loaded by the first certificate it checks.
///
/// Only [`ServerCertVerifier::verify_server_cert`] needs the roots. The handshake
/// signatures are checked with the provider's algorithms, exactly as the platform verifier
/// (a WebPKI verifier) does, and the schemes offered are the provider's, so a client that
/// never meets a TLS server never reads a root. A failure to load the roots is kept and
/// reported by every certificate check, as reqwest would have reported it when building the
/// client.
pub struct LazyRoots {
    provider: Arc<CryptoProvider>,
    load: LoadRoots,
    loaded: OnceLock<Result<Arc<dyn ServerCertVerifier>, rustls::Error>>,
}

impl LazyRoots {
    pub fn new(provider: Arc<CryptoProvider>, load: LoadRoots) -> Self {
        LazyRoots {
            provider,
            load,
            loaded: OnceLock::new(),
        }
    }

    /// Whether the roots have been loaded (or their loading has failed).
    pub fn is_loaded(&self) -> bool {
        self.loaded.get().is_some()
    }

    fn verifier(&self) -> Result<&Arc<dyn ServerCertVerifier>, rustls::Error> {
        self.loaded
            .get_or_init(|| (self.load)(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl fmt::Debug for LazyRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyRoots")
            .field("loaded", &self.is_loaded())
            .finish()
    }
}

impl ServerCertVerifier for LazyRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests;
