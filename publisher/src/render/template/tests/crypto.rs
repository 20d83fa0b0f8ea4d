//! Hashes, passwords, AES, keys and certificates: known vectors, round trips, Go's
//! certificate fields checked by parsing, signatures checked with ring.

use std::net::Ipv4Addr;

use base64::Engine as _;
use x509_cert::Certificate;
use x509_cert::der::{Decode as _, Encode as _};
use x509_cert::ext::pkix::{
    AuthorityKeyIdentifier, BasicConstraints, KeyUsage, KeyUsages, SubjectAltName, SubjectKeyIdentifier, name::GeneralName,
};

use super::*;

fn pem_der(pem: &str) -> Vec<u8> {
    sprig_pem(pem).1
}

fn sprig_pem(pem: &str) -> (String, Vec<u8>) {
    let (label, der) = x509_cert::der::pem::decode_vec(pem.as_bytes()).expect("PEM");
    (label.to_string(), der)
}

fn certificate(pem: &str) -> Certificate {
    Certificate::from_der(&pem_der(pem)).expect("a DER certificate")
}

/// Checks `cert`'s signature with the public key of `issuer`.
fn assert_signed_by(cert: &Certificate, issuer: &Certificate) {
    let key = issuer.tbs_certificate().subject_public_key_info();
    let algorithm: &dyn ring::signature::VerificationAlgorithm = match key.algorithm.oid.to_string().as_str() {
        "1.2.840.113549.1.1.1" => &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        "1.2.840.10045.2.1" => &ring::signature::ECDSA_P256_SHA256_ASN1,
        "1.3.101.112" => &ring::signature::ED25519,
        other => panic!("unexpected key algorithm {other}"),
    };
    let tbs = cert.tbs_certificate().to_der().unwrap();
    ring::signature::UnparsedPublicKey::new(algorithm, key.subject_public_key.raw_bytes())
        .verify(&tbs, cert.signature().raw_bytes())
        .expect("the signature verifies");
}

/// Renders `text` and splits the output at `|`.
fn parts(text: &str) -> Vec<String> {
    seeded(text).split('|').map(str::to_string).collect()
}

#[test]
fn fn_hashes_match_known_digests() {
    assert_eq!(
        ok(
            r#"{{ sha1sum "Hello world!" }} {{ sha256sum "Hello world!" }} {{ adler32sum "Hello world!" }} {{ sha512sum "Hello world!" | trunc 32 }}"#
        ),
        "d3486ae9136e7856bc42212385ea797094475802 c0535e4be2b79ffd93291305436bf889314e4a3faec05ecffcbb7df31ad9e51a 487130206 f6cde2a0f819314cdde55fc227d8d7da"
    );
}

#[test]
fn fn_derive_password_matches_master_password() {
    assert_eq!(ok(r#"{{ derivePassword 1 "long" "password" "user" "example.com" }}"#), "ZedaFaxcZaso9*");
    assert!(error_message(r#"{{ derivePassword 1 "huge" "p" "u" "s" }}"#).contains("cannot find password template huge"));
    assert!(error_message(r#"{{ derivePassword -1 "long" "p" "u" "s" }}"#).contains("32 unsigned bits"));
}

#[test]
fn fn_bcrypt_and_htpasswd_verify_and_repeat() {
    let out = parts(r#"{{ bcrypt "password" }}|{{ htpasswd "myUser" "myPassword" }}|{{ bcrypt "password" }}"#);
    assert!(out[0].starts_with("$2a$10$") && out[0].len() == 60, "{}", out[0]);
    assert!(bcrypt::verify("password", &out[0]).unwrap());
    let (user, hash) = out[1].split_once(':').unwrap();
    assert!(user == "myUser" && bcrypt::verify("myPassword", hash).unwrap(), "{}", out[1]);
    assert_ne!(out[0], out[2], "each call draws a new salt");
    assert_eq!(parts(r#"{{ bcrypt "password" }}|{{ htpasswd "myUser" "myPassword" }}|{{ bcrypt "password" }}"#), out);
    let err = render_with(&SOURCE, r#"{{ htpasswd "a:b" "x" }}"#, &data(), &seeded_env("t")).unwrap_err();
    assert!(err.to_string().contains("invalid username: a:b"), "{err}");
    let err = render_with(&SOURCE, &format!("{{{{ bcrypt \"{}\" }}}}", "x".repeat(73)), &data(), &seeded_env("t")).unwrap_err();
    assert!(err.to_string().contains("failed to encrypt string with bcrypt"), "{err}");
}

#[test]
fn fn_aes_round_trips_and_repeats() {
    let out = parts(
        r#"{{ encryptAES "secretkey" "plaintext" }}|{{ "plaintext" | encryptAES "secretkey" | decryptAES "secretkey" }}|{{ encryptAES "k" "" }}|{{ decryptAES "k" "" }}"#,
    );
    assert_eq!(out[1..], ["plaintext", "", ""]);
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(&out[0]).unwrap().len(), 32);
    assert_eq!(parts(r#"{{ encryptAES "secretkey" "plaintext" }}"#)[0], out[0]);
    // Decrypting needs no entropy.
    assert_eq!(ok(&format!(r#"{{{{ decryptAES "secretkey" "{}" }}}}"#, out[0])), "plaintext");
    assert!(error_message(r#"{{ decryptAES "k" "abc" }}"#).contains("invalid base64"));
    assert!(error_message(r#"{{ decryptAES "k" "AAAAAAAAAAAAAAAAAAAAAA==" }}"#).contains("whole AES blocks"));
}

#[test]
fn fn_gen_private_key_writes_go_pem_blocks() {
    let out = parts(r#"{{ genPrivateKey "ecdsa" }}|{{ genPrivateKey "ed25519" }}"#);
    let (label, der) = sprig_pem(&out[0]);
    assert_eq!(label, "EC PRIVATE KEY");
    assert!(p256::SecretKey::from_sec1_der(&der).is_ok());
    let (label, der) = sprig_pem(&out[1]);
    assert_eq!((label.as_str(), der.len()), ("PRIVATE KEY", 48), "PKCS #8 v1 without the public key, as Go writes it");
    assert_eq!(parts(r#"{{ genPrivateKey "ecdsa" }}|{{ genPrivateKey "ed25519" }}"#), out);
    let env = seeded_env("t");
    for (kind, needle) in [("dsa", "DSA keys are not supported"), ("rsa2", "Unknown type rsa2")] {
        let err = render_with(&SOURCE, &format!("{{{{ genPrivateKey \"{kind}\" }}}}"), &data(), &env).unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
}

#[test]
fn fn_gen_ca_and_signed_certs_have_gos_fields() {
    let text = r#"{{ $ca := genCA "airlock-ca" 365 }}{{ $ca.Cert }}|{{ $ca.Key }}|{{ $c := genSignedCert "web" (list "10.0.0.1" "::ffff:10.0.0.2") (list "web.example.com") 30 $ca }}{{ $c.Cert }}|{{ $c.Key }}"#;
    let out = parts(text);
    let (ca, cert) = (certificate(&out[0]), certificate(&out[2]));
    assert!(out[1].starts_with("-----BEGIN RSA PRIVATE KEY-----\n") && out[3].starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    let (ca_tbs, tbs) = (ca.tbs_certificate(), cert.tbs_certificate());
    assert_eq!((ca_tbs.subject().to_string(), ca_tbs.issuer().to_string()), ("CN=airlock-ca".into(), "CN=airlock-ca".into()));
    assert_eq!((tbs.subject().to_string(), tbs.issuer().to_string()), ("CN=web".into(), "CN=airlock-ca".into()));
    let (_, constraints) = ca_tbs.get_extension::<BasicConstraints>().unwrap().unwrap();
    assert!(constraints.ca);
    let (_, usage) = ca_tbs.get_extension::<KeyUsage>().unwrap().unwrap();
    assert_eq!(usage, KeyUsage(KeyUsages::DigitalSignature | KeyUsages::KeyEncipherment | KeyUsages::KeyCertSign));
    let (_, ski) = ca_tbs.get_extension::<SubjectKeyIdentifier>().unwrap().unwrap();
    let (_, aki) = tbs.get_extension::<AuthorityKeyIdentifier>().unwrap().unwrap();
    assert_eq!(aki.key_identifier.as_ref(), Some(&ski.0));
    let (_, san) = tbs.get_extension::<SubjectAltName>().unwrap().unwrap();
    let names: Vec<String> = san
        .0
        .iter()
        .map(|name| match name {
            GeneralName::DnsName(dns) => dns.to_string(),
            GeneralName::IpAddress(ip) => format!("{:?}", ip.as_bytes()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        [
            "web.example.com".to_string(),
            format!("{:?}", Ipv4Addr::new(10, 0, 0, 1).octets()),
            format!("{:?}", Ipv4Addr::new(10, 0, 0, 2).octets())
        ]
    );
    assert_eq!(tbs.validity().not_before.to_unix_duration().as_secs(), 1_714_557_600);
    assert_eq!(tbs.validity().not_after.to_unix_duration().as_secs(), 1_714_557_600 + 30 * 86_400);
    assert_signed_by(&ca, &ca);
    assert_signed_by(&cert, &ca);
    assert_eq!(parts(text), out, "the same inputs give the same certificates");
}

#[test]
fn fn_certs_with_given_keys_and_build_custom_cert() {
    let text = r#"{{ $ec := genPrivateKey "ecdsa" }}{{ $ca := genCAWithKey "ec-ca" 10 $ec }}{{ $ca.Cert }}|{{ eq $ca.Key $ec }}|{{ $ed := genPrivateKey "ed25519" }}{{ $s := genSelfSignedCertWithKey "" nil (list "only.example") 1 $ed }}{{ $s.Cert }}|{{ $w := genSignedCertWithKey "leaf" nil nil 1 $ca (genPrivateKey "ed25519") }}{{ $w.Cert }}|{{ $b := buildCustomCert (b64enc $ca.Cert) (b64enc $ca.Key) }}{{ eq $b.Cert $ca.Cert }}"#;
    let out = parts(text);
    let (ca, own, leaf) = (certificate(&out[0]), certificate(&out[2]), certificate(&out[3]));
    assert_eq!((out[1].as_str(), out[4].as_str()), ("true", "true"));
    assert_signed_by(&ca, &ca);
    assert_signed_by(&own, &own);
    assert_signed_by(&leaf, &ca);
    assert_eq!(own.tbs_certificate().subject().to_string(), "");
    let (critical, _) = own.tbs_certificate().get_extension::<SubjectAltName>().unwrap().unwrap();
    assert!(critical, "Go marks the SAN critical when the subject is empty");
}

#[test]
fn rejects_bad_certificate_arguments() {
    let env = seeded_env("t");
    for (text, needle) in [
        (r#"{{ genSelfSignedCert "x" (list "999.1.1.1") nil 1 }}"#, "error parsing ip: 999.1.1.1"),
        (r#"{{ genSelfSignedCert "x" (list 1) nil 1 }}"#, "is not a string"),
        (r#"{{ genSelfSignedCert "x" nil (list "bücher.de") 1 }}"#, "IA5String"),
        (r#"{{ genCAWithKey "x" 1 "not a key" }}"#, "no PEM data in input"),
        (r#"{{ genSignedCert "x" nil nil 1 (dict "Cert" "x" "Key" "y") }}"#, "unable to decode certificate"),
        (r#"{{ genSignedCert "x" nil nil 1 "ca" }}"#, "must be a map"),
        (r#"{{ buildCustomCert "!!" "" }}"#, "unable to decode base64 certificate"),
        (r#"{{ genCAWithKey "x" 99999999 (genPrivateKey "ecdsa") }}"#, "past the year 9999"),
    ] {
        let err = render_with(&SOURCE, text, &data(), &env).expect_err(text);
        assert!(err.to_string().contains(needle), "{text}: {err}");
    }
}

#[test]
fn rejects_key_generation_past_the_render_budget() {
    let many = "{{ genPrivateKey \"ecdsa\" | len }}".repeat(LIMITS.costly_calls as usize);
    assert!(render_with(&SOURCE, &many, &data(), &seeded_env("t")).is_ok());
    let err = render_with(&SOURCE, &format!("{many}{{{{ bcrypt \"x\" }}}}"), &data(), &seeded_env("t")).unwrap_err();
    assert!(err.to_string().contains("used up its budget"), "{err}");
}

#[test]
fn fn_sha256sum_hashes_hex() {
    assert_eq!(ok(r#"{{ sha256sum "abc" }}"#), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
