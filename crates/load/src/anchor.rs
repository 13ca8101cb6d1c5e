//! `--cacert` certificates that the server presents as its own: trusted as given, as curl
//! does, the host name checked as curl checks it (subjectAltName, else the subject's CN).
//!
//! Not for chains: every certificate that is not byte for byte one of the `--cacert` ones goes
//! through webpki's verification unchanged.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{DigitallySignedStruct, SignatureScheme};

/// `--cacert`: a server certificate that is itself one of the given anchors (byte for byte)
/// is trusted as given, as curl and OpenSSL do: the usual `openssl req -x509` certificate is
/// self-signed with CA:TRUE, and webpki alone refuses a CA as a server's certificate even when
/// it is the very anchor. Its host name is still checked; its dates are not, as webpki never
/// checks an anchor's. Every other certificate goes through webpki's chain verification.
#[derive(Debug)]
pub(crate) struct AnchorOrChain {
    pub(crate) anchors: Vec<CertificateDer<'static>>,
    pub(crate) chain: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for AnchorOrChain {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self
            .anchors
            .iter()
            .any(|a| a.as_ref() == end_entity.as_ref())
        {
            let parsed = ParsedCertificate::try_from(end_entity)?;
            let by_name = rustls::client::verify_server_name(&parsed, server_name);
            // curl's (and OpenSSL's) rule for a certificate without subjectAltName: its
            // subject's CN is the name. webpki never reads the CN; the usual openssl req -x509
            // -subj /CN=host certificate has no subjectAltName.
            if let Err(e) = by_name {
                if !cn_names(end_entity.as_ref(), server_name) {
                    return Err(e);
                }
            }
            return Ok(ServerCertVerified::assertion());
        }
        self.chain
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

/// Whether the certificate `der` has no subjectAltName extension and its subject's common name
/// is `name` (a DNS name, case-insensitively, or an IP address as written): OpenSSL's
/// fallback, which curl applies. Parsed with yasna (rcgen's DER library) since webpki exposes
/// neither the subject nor the extensions; anything unparsable is no match.
fn cn_names(der: &[u8], name: &ServerName<'_>) -> bool {
    let wanted = match name {
        ServerName::DnsName(dns) => dns.as_ref().to_ascii_lowercase(),
        ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => return false,
    };
    let Some((cn, has_san)) = subject_cn(der) else {
        return false;
    };
    !has_san && cn.is_some_and(|cn| cn.to_ascii_lowercase() == wanted)
}

/// The subject's common name (the last one, as OpenSSL takes it) and whether the certificate
/// has a subjectAltName extension.
fn subject_cn(der: &[u8]) -> Option<(Option<String>, bool)> {
    const COMMON_NAME: [u64; 4] = [2, 5, 4, 3];
    const SUBJECT_ALT_NAME: [u64; 4] = [2, 5, 29, 17];
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature }.
    let mut parts = Vec::new();
    yasna::parse_der(der, |r| {
        r.read_sequence_of(|r| {
            parts.push(r.read_der()?);
            Ok(())
        })
    })
    .ok()?;
    // TBSCertificate: [0] version (optional), serial, signature, issuer, validity, subject,
    // subjectPublicKeyInfo, [1] and [2] unique ids (optional), [3] extensions (optional).
    let mut tbs = Vec::new();
    yasna::parse_der(parts.first()?, |r| {
        r.read_sequence_of(|r| {
            tbs.push(r.read_der()?);
            Ok(())
        })
    })
    .ok()?;
    let subject = tbs.get(if tbs.first()?.first() == Some(&0xa0) {
        5
    } else {
        4
    })?;
    let mut cn = None;
    yasna::parse_der(subject, |r| {
        r.read_sequence_of(|r| {
            r.read_set_of(|r| {
                r.read_sequence(|r| {
                    let oid = r.next().read_oid()?;
                    let value = r.next().read_tagged_der()?;
                    if oid.components().as_slice() == COMMON_NAME {
                        cn = String::from_utf8(value.value().to_vec()).ok();
                    }
                    Ok(())
                })
            })
        })
    })
    .ok()?;
    let mut has_san = false;
    if let Some(extensions) = tbs.iter().find(|t| t.first() == Some(&0xa3)) {
        yasna::parse_der(extensions, |r| {
            r.read_tagged(yasna::Tag::context(3), |r| {
                r.read_sequence_of(|r| {
                    r.read_sequence(|r| {
                        let oid = r.next().read_oid()?;
                        has_san |= oid.components().as_slice() == SUBJECT_ALT_NAME;
                        r.read_optional(|r| r.read_bool())?;
                        r.next().read_bytes()?;
                        Ok(())
                    })
                })
            })
        })
        .ok()?;
    }
    Some((cn, has_san))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(san: Vec<rcgen::SanType>, cn: &str) -> Vec<u8> {
        let key_pair = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.subject_alt_names = san;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.self_signed(&key_pair).unwrap().der().to_vec()
    }

    fn name(n: &str) -> ServerName<'static> {
        ServerName::try_from(n.to_string()).unwrap()
    }

    #[test]
    fn the_cn_names_a_certificate_only_without_subject_alt_name() {
        let ip = cert(Vec::new(), "127.0.0.1");
        assert_eq!(subject_cn(&ip), Some((Some("127.0.0.1".into()), false)));
        assert!(cn_names(&ip, &name("127.0.0.1")));
        assert!(!cn_names(&ip, &name("127.0.0.2")));
        let host = cert(Vec::new(), "LocalHost");
        assert!(cn_names(&host, &name("localhost")));
        assert!(!cn_names(&host, &name("other.example")));
        // With a subjectAltName, the CN is not a name (RFC 6125, curl, browsers).
        let san = cert(
            vec![rcgen::SanType::DnsName("other.example".try_into().unwrap())],
            "localhost",
        );
        assert_eq!(subject_cn(&san), Some((Some("localhost".into()), true)));
        assert!(!cn_names(&san, &name("localhost")));
        assert!(!cn_names(b"not a certificate", &name("localhost")));
    }
}
