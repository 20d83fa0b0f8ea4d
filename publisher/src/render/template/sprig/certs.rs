//! Sprig's certificate functions: `genCA`, `genCAWithKey`, `genSelfSignedCert`,
//! `genSelfSignedCertWithKey`, `genSignedCert`, `genSignedCertWithKey` and
//! `buildCustomCert`, each returning a dictionary of PEM `Cert` and `Key`, as Sprig's
//! `certificate` struct has.
//!
//! The certificate is the one Go's `x509.CreateCertificate` makes from Sprig's template:
//! v3, a 128-bit random serial, subject CN only, valid from the render's `now` for the
//! given days, key usage digital signature and key encipherment (and certificate signing
//! for a CA), extended key usage server and client auth, basic constraints, a SHA-1
//! subject key identifier for a CA, the issuer's key identifier when signed by another,
//! and the DNS names and IP addresses given. It is encoded here field by field, since
//! the certificate crates build only what their own profiles prescribe. New keys are
//! RSA 2048, as Sprig's; serials and keys come from the render's stream.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use base64::Engine as _;
use gotmpl::{Value, ValueFunc};
use rand_core::Rng as _;
use sha1::Digest as _;
use x509_cert::der::{Decode as _, Encode as _};
use x509_cert::ext::pkix::SubjectKeyIdentifier;

use super::args::{Map, count_at, failure, int_at, map, map_at, string_at, text, want, wrong_type};
use super::keys::{Kind, PrivateKey, first_pem_block, generate};
use crate::render::template::session::Session;

const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
const OID_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
const OID_EXT_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
const OID_BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
const OID_SUBJECT_KEY_ID: &[u8] = &[0x55, 0x1d, 0x0e];
const OID_AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1d, 0x23];
const OID_SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
const OID_SERVER_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
const OID_CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];

/// Go's `x509.KeyUsage` bits: digital signature, key encipherment, certificate signing.
const KEY_USAGE: u16 = 1 | 1 << 2;
const KEY_USAGE_CA: u16 = KEY_USAGE | 1 << 5;

/// Sprig's `genCA` and friends' RSA key size.
const RSA_BITS: usize = 2048;

const NANOS_PER_DAY: i128 = 86_400 * 1_000_000_000;

pub(super) fn funcs(session: &Session) -> Vec<(&'static str, ValueFunc)> {
    type Make = fn(&Session, &'static str, &[Value]) -> gotmpl::Result<Value>;
    let table: [(&'static str, Make); 7] = [
        ("genCA", |s, name, a| {
            want(name, a, 2)?;
            let key = generate(s, name, Kind::Rsa(RSA_BITS))?;
            issue(s, name, &Spec::ca(name, a)?, key, None)
        }),
        ("genCAWithKey", |s, name, a| {
            want(name, a, 3)?;
            let key = pem_key(name, a, 2)?;
            issue(s, name, &Spec::ca(name, a)?, key, None)
        }),
        ("genSelfSignedCert", |s, name, a| {
            want(name, a, 4)?;
            let key = generate(s, name, Kind::Rsa(RSA_BITS))?;
            issue(s, name, &Spec::leaf(name, a)?, key, None)
        }),
        ("genSelfSignedCertWithKey", |s, name, a| {
            want(name, a, 5)?;
            let key = pem_key(name, a, 4)?;
            issue(s, name, &Spec::leaf(name, a)?, key, None)
        }),
        ("genSignedCert", |s, name, a| {
            want(name, a, 5)?;
            let ca = Issuer::from_value(name, a)?;
            let key = generate(s, name, Kind::Rsa(RSA_BITS))?;
            issue(s, name, &Spec::leaf(name, a)?, key, Some(&ca))
        }),
        ("genSignedCertWithKey", |s, name, a| {
            want(name, a, 6)?;
            let ca = Issuer::from_value(name, a)?;
            let key = pem_key(name, a, 5)?;
            issue(s, name, &Spec::leaf(name, a)?, key, Some(&ca))
        }),
        ("buildCustomCert", |_, name, a| build_custom(name, a)),
    ];
    table
        .into_iter()
        .map(|(name, make)| {
            let session = session.clone();
            (name, Arc::new(move |a: &[Value]| make(&session, name, a)) as ValueFunc)
        })
        .collect()
}

/// What varies between Sprig's certificate templates.
struct Spec {
    common_name: String,
    ips: Vec<IpAddr>,
    dns_names: Vec<String>,
    days: i64,
    is_ca: bool,
}

impl Spec {
    /// `CN DAYS ...` of the CA functions.
    fn ca(name: &str, a: &[Value]) -> gotmpl::Result<Self> {
        Ok(Self {
            common_name: string_at(name, a, 0)?.to_string(),
            ips: Vec::new(),
            dns_names: Vec::new(),
            days: int_at(name, a, 1)?,
            is_ca: true,
        })
    }

    /// `CN IPS DNS DAYS ...` of the others.
    fn leaf(name: &str, a: &[Value]) -> gotmpl::Result<Self> {
        let ips = strings_at(name, a, 1)?
            .into_iter()
            .map(|ip| parse_ip(&ip).ok_or_else(|| failure(name, format!("error parsing ip: {ip}"))))
            .collect::<Result<_, _>>()?;
        let dns_names = strings_at(name, a, 2)?;
        if let Some(bad) = dns_names.iter().find(|d| !d.is_ascii()) {
            return Err(failure(name, format!("the DNS name {bad:?} cannot be encoded as an IA5String")));
        }
        Ok(Self { common_name: string_at(name, a, 0)?.to_string(), ips, dns_names, days: count_at(name, a, 3)? as i64, is_ca: false })
    }
}

/// Go's `net.ParseIP`, with IPv4-mapped IPv6 addresses written as IPv4, as `To4` does.
fn parse_ip(s: &str) -> Option<IpAddr> {
    match s.parse().ok()? {
        IpAddr::V6(v6) => Some(v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)),
        v4 => Some(v4),
    }
}

/// A list of strings, or nil for none (Sprig's `[]interface{}` parameters).
fn strings_at(name: &str, a: &[Value], index: usize) -> gotmpl::Result<Vec<String>> {
    match &a[index] {
        Value::Nil => Ok(Vec::new()),
        Value::List(items) => items
            .iter()
            .map(|item| {
                item.as_str().map(str::to_string).ok_or_else(|| failure(name, format!("argument {}: {item} is not a string", index + 1)))
            })
            .collect(),
        other => Err(wrong_type(name, index, "a list", other)),
    }
}

fn pem_key(name: &str, a: &[Value], index: usize) -> gotmpl::Result<PrivateKey> {
    PrivateKey::from_pem(string_at(name, a, index)?).map_err(|why| failure(name, format!("parsing private key: {why}")))
}

/// The CA a certificate is signed by: its subject, key identifier and key.
struct Issuer {
    subject: Vec<u8>,
    key_id: Option<Vec<u8>>,
    key: PrivateKey,
}

impl Issuer {
    /// The CA dictionary at argument 5 (`{Cert, Key}` as `genCA` returns it).
    fn from_value(name: &str, a: &[Value]) -> gotmpl::Result<Self> {
        let ca: &Map = map_at(name, a, 4)?;
        let field = |key: &str| ca.get(key).and_then(Value::as_str).ok_or_else(|| failure(name, format!("the CA has no {key} text")));
        let (_, der) = first_pem_block(field("Cert")?).ok_or_else(|| failure(name, "unable to decode certificate"))?;
        let cert = x509_cert::Certificate::from_der(&der).map_err(|e| failure(name, format!("error parsing certificate: {e}")))?;
        let tbs = cert.tbs_certificate();
        let subject = tbs.subject().to_der().map_err(|e| failure(name, e))?;
        let key_id = tbs.get_extension::<SubjectKeyIdentifier>().ok().flatten().map(|(_, ski)| ski.0.as_bytes().to_vec());
        let key = PrivateKey::from_pem(field("Key")?).map_err(|why| failure(name, format!("error parsing private key: {why}")))?;
        Ok(Self { subject, key_id, key })
    }
}

/// The certificate for `spec` and `key`, signed by `issuer` or by `key` itself.
fn issue(session: &Session, name: &str, spec: &Spec, key: PrivateKey, issuer: Option<&Issuer>) -> gotmpl::Result<Value> {
    let fail = |why: String| failure(name, format!("error creating certificate: {why}"));
    let now = session.now(name)?;
    let mut serial = [0u8; 16];
    session.random(name, |stream| {
        stream.fill_bytes(&mut serial);
        Ok(())
    })?;
    let not_after = i128::from(spec.days)
        .checked_mul(NANOS_PER_DAY)
        .and_then(|nanos| jiff::Timestamp::from_nanosecond(now.as_nanosecond() + nanos).ok());
    let not_after = not_after.ok_or_else(|| fail(format!("{} days from now is past the year 9999", spec.days)))?;
    let public_key_info = key.public_key_info().map_err(fail)?;
    let subject = name_der(&spec.common_name);
    let signer = issuer.map_or(&key, |ca| &ca.key);
    let issuer_name = issuer.map_or_else(|| subject.clone(), |ca| ca.subject.clone());
    let authority_key_id = issuer.filter(|ca| ca.subject != subject).and_then(|ca| ca.key_id.clone());
    let subject_key_id =
        if spec.is_ca { Some(sha1::Sha1::digest(public_key_bits(&public_key_info).map_err(fail)?).to_vec()) } else { None };
    let extensions = extensions(spec, subject_key_id, authority_key_id, spec.common_name.is_empty());
    let tbs = tlv(
        0x30,
        &[
            tlv(0xa0, &tlv(0x02, &[2])),
            integer(&serial),
            signer.signature_algorithm().to_vec(),
            issuer_name,
            tlv(0x30, &[time(now), time(not_after)].concat()),
            subject,
            public_key_info,
            tlv(0xa3, &tlv(0x30, &extensions.concat())),
        ]
        .concat(),
    );
    let signature = signer.sign(&tbs).map_err(fail)?;
    let cert = tlv(0x30, &[tbs, signer.signature_algorithm().to_vec(), tlv(0x03, &[[0].as_slice(), &signature].concat())].concat());
    let cert_pem =
        x509_cert::der::pem::encode_string("CERTIFICATE", x509_cert::der::pem::LineEnding::LF, &cert).map_err(|e| fail(e.to_string()))?;
    let key_pem = key.to_pem().map_err(|why| failure(name, format!("error pem-encoding key: {why}")))?;
    Ok(certificate(cert_pem, key_pem))
}

fn certificate(cert: String, key: String) -> Value {
    map(BTreeMap::from([(Arc::from("Cert"), text(cert)), (Arc::from("Key"), text(key))]))
}

/// The extensions Go writes for Sprig's template, in Go's order.
fn extensions(spec: &Spec, subject_key_id: Option<Vec<u8>>, authority_key_id: Option<Vec<u8>>, subject_empty: bool) -> Vec<Vec<u8>> {
    let usage = if spec.is_ca { KEY_USAGE_CA } else { KEY_USAGE };
    let mut out = vec![
        extension(OID_KEY_USAGE, true, &key_usage(usage)),
        extension(OID_EXT_KEY_USAGE, false, &tlv(0x30, &[tlv(0x06, OID_SERVER_AUTH), tlv(0x06, OID_CLIENT_AUTH)].concat())),
        extension(OID_BASIC_CONSTRAINTS, true, &tlv(0x30, &if spec.is_ca { tlv(0x01, &[0xff]) } else { Vec::new() })),
    ];
    if let Some(id) = subject_key_id {
        out.push(extension(OID_SUBJECT_KEY_ID, false, &tlv(0x04, &id)));
    }
    if let Some(id) = authority_key_id {
        out.push(extension(OID_AUTHORITY_KEY_ID, false, &tlv(0x30, &tlv(0x80, &id))));
    }
    if !spec.dns_names.is_empty() || !spec.ips.is_empty() {
        let dns = spec.dns_names.iter().map(|d| tlv(0x82, d.as_bytes()));
        let ips = spec.ips.iter().map(|ip| match ip {
            IpAddr::V4(v4) => tlv(0x87, &v4.octets()),
            IpAddr::V6(v6) => tlv(0x87, &v6.octets()),
        });
        out.push(extension(OID_SUBJECT_ALT_NAME, subject_empty, &tlv(0x30, &dns.chain(ips).collect::<Vec<_>>().concat())));
    }
    out
}

fn extension(oid: &[u8], critical: bool, value: &[u8]) -> Vec<u8> {
    let critical = if critical { tlv(0x01, &[0xff]) } else { Vec::new() };
    tlv(0x30, &[tlv(0x06, oid), critical, tlv(0x04, value)].concat())
}

/// Go's `KeyUsage` as a BIT STRING: bit 0 first, trailing zero bits not counted.
fn key_usage(usage: u16) -> Vec<u8> {
    let bytes = [(usage as u8).reverse_bits(), ((usage >> 8) as u8).reverse_bits()];
    let bytes = if bytes[1] == 0 { &bytes[..1] } else { &bytes[..] };
    let unused = bytes.last().map_or(0, |b| b.trailing_zeros().min(7) as u8);
    tlv(0x03, &[[unused].as_slice(), bytes].concat())
}

/// A Name of just the common name, PrintableString where Go would use it; no CN, no RDN.
fn name_der(common_name: &str) -> Vec<u8> {
    if common_name.is_empty() {
        return tlv(0x30, &[]);
    }
    let printable = common_name.bytes().all(|b| b.is_ascii_alphanumeric() || b" '()+,-./:=?".contains(&b));
    let value = tlv(if printable { 0x13 } else { 0x0c }, common_name.as_bytes());
    tlv(0x30, &tlv(0x31, &tlv(0x30, &[tlv(0x06, OID_COMMON_NAME), value].concat())))
}

/// UTCTime for 1950 to 2049, GeneralizedTime otherwise, to the second, as Go writes them.
fn time(at: jiff::Timestamp) -> Vec<u8> {
    let dt = jiff::tz::Offset::UTC.to_datetime(at);
    let rest = format!("{:02}{:02}{:02}{:02}{:02}Z", dt.month(), dt.day(), dt.hour(), dt.minute(), dt.second());
    if (1950..2050).contains(&dt.year()) {
        tlv(0x17, format!("{:02}{rest}", dt.year() % 100).as_bytes())
    } else {
        tlv(0x18, format!("{:04}{rest}", dt.year()).as_bytes())
    }
}

/// A positive DER INTEGER of big-endian `bytes`.
fn integer(bytes: &[u8]) -> Vec<u8> {
    let trimmed: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    let content = match trimmed.first() {
        None => vec![0],
        Some(first) if first & 0x80 != 0 => [[0].as_slice(), &trimmed].concat(),
        Some(_) => trimmed,
    };
    tlv(0x02, &content)
}

/// The subjectPublicKey bits of a SubjectPublicKeyInfo, which Go hashes for the key id.
fn public_key_bits(public_key_info: &[u8]) -> Result<Vec<u8>, String> {
    let info = x509_cert::spki::SubjectPublicKeyInfoRef::from_der(public_key_info).map_err(|e| e.to_string())?;
    Ok(info.subject_public_key.raw_bytes().to_vec())
}

/// One DER tag-length-value.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// Sprig's `buildCustomCert CERT_BASE64 KEY_BASE64`: the PEM certificate and key, once
/// each decodes and parses.
fn build_custom(name: &str, a: &[Value]) -> gotmpl::Result<Value> {
    want(name, a, 2)?;
    let decode = |index: usize, what: &str| -> gotmpl::Result<String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(string_at(name, a, index)?)
            .map_err(|_| failure(name, format!("unable to decode base64 {what}")))?;
        String::from_utf8(bytes).map_err(|_| failure(name, format!("the {what} is not PEM text")))
    };
    let (cert, key) = (decode(0, "certificate")?, decode(1, "private key")?);
    let (_, der) = first_pem_block(&cert).ok_or_else(|| failure(name, "unable to decode certificate"))?;
    x509_cert::Certificate::from_der(&der).map_err(|e| failure(name, format!("error parsing certificate: {e}")))?;
    PrivateKey::from_pem(&key).map_err(|why| failure(name, format!("error parsing private key: {why}")))?;
    Ok(certificate(cert, key))
}
