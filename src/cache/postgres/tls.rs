//! TLS to the store with rustls, checking as much as libpq's `sslmode`
//! asks: nothing (`prefer`, `require`: encrypted, not authenticated), the
//! CA (`verify-ca`: any name), or the CA and the host's name
//! (`verify-full`).
//!
//! Owns: the rustls client configuration per mode, the CAs read from
//! `sslrootcert`, and the words for a refused certificate. Must never
//! accept a certificate a verifying mode would refuse, nor skip the
//! handshake's own signature checks in any mode (a certificate unverified
//! is still the one the server proved it holds).

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::address::{Roots, Security};

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The connector for a mode (with `disable` it is never used).
pub(super) fn connector(security: &Security) -> Result<MakeRustlsConnect, String> {
    let verifier: Arc<dyn ServerCertVerifier> = match security {
        Security::Disable | Security::Prefer | Security::Require => {
            Arc::new(Unverified { provider: provider() })
        }
        Security::VerifyCa(roots) => Arc::new(AnyName { inner: webpki(roots)? }),
        Security::VerifyFull(roots) => webpki(roots)?,
    };
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

fn webpki(roots: &Roots) -> Result<Arc<WebPkiServerVerifier>, String> {
    let mut store = RootCertStore::empty();
    let (certs, from) = match roots {
        Roots::File(file) => {
            let shown = format!("sslrootcert={}", file.display());
            let certs: Result<Vec<_>, _> = CertificateDer::pem_file_iter(file)
                .map_err(|e| format!("{shown}: cannot be read as PEM certificates ({e})"))?
                .collect();
            (certs.map_err(|e| format!("{shown}: not PEM certificates ({e})"))?, shown)
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            (found.certs, "sslrootcert=system".to_string())
        }
    };
    let (added, _ignored) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!("{from}: holds no CA certificate redjury can use"));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider())
        .build()
        .map_err(|e| format!("{from}: {e}"))
}

/// `verify-ca`: the chain must end at a trusted CA; the name is not
/// checked (as libpq).
#[derive(Debug)]
struct AnyName {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `prefer` and `require`: encrypted, the certificate taken as it comes
/// (libpq's meaning of those modes), the handshake still signed by it.
#[derive(Debug)]
struct Unverified {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// A refused certificate in words that say what to do, when `e` (or
/// what it wraps) is one.
pub(super) fn refused_certificate(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(e);
    while let Some(e) = next {
        let tls = e.downcast_ref::<rustls::Error>().or_else(|| {
            e.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(rustls::Error::InvalidCertificate(c)) = tls {
            return Some(match c {
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                    format!("the server's certificate is not for this host name ({}); connect by the name the certificate names, or use sslmode=verify-ca to check only the CA", tls.map(ToString::to_string).unwrap_or_default())
                }
                CertificateError::UnknownIssuer => "the server's certificate is not signed by a CA in sslrootcert (UnknownIssuer): give the CA that signed it".to_string(),
                other => format!("the server's certificate was refused ({other:?})"),
            });
        }
        if let Some(tls) = tls {
            return Some(format!("TLS handshake failed: {tls}"));
        }
        next = e.source();
    }
    None
}
