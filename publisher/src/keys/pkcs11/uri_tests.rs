use super::*;

const MODULE: &str = "module-path=/usr/lib/softhsm/libsofthsm2.so";

fn parse(text: &str) -> Result<Pkcs11Uri, UriError> {
    Pkcs11Uri::parse(text)
}

#[test]
fn reads_the_token_the_object_the_module_and_the_pin() {
    let uri = parse(&format!("pkcs11:token=air%20lock;object=ops;id=%01%ff;type=private?{MODULE}&pin-value=12%2634")).unwrap();
    assert_eq!(uri.token.as_deref(), Some("air lock"));
    assert_eq!(uri.object.as_deref(), Some("ops"));
    assert_eq!(uri.id, Some(vec![0x01, 0xff]));
    assert_eq!(uri.module_path, PathBuf::from("/usr/lib/softhsm/libsofthsm2.so"));
    assert_eq!(uri.pin, Pin::Value("12&34".into()));
    assert_eq!(uri.to_string(), "pkcs11:token=air%20lock;object=ops;id=%01%FF");

    let uri = parse(&format!("PKCS11:manufacturer=SoftHSM%20project;model=SoftHSM%20v2;serial=abc;slot-id=7;id=%02?{MODULE}")).unwrap();
    assert_eq!(
        (uri.manufacturer.as_deref(), uri.model.as_deref(), uri.serial.as_deref()),
        (Some("SoftHSM project"), Some("SoftHSM v2"), Some("abc"))
    );
    assert_eq!((uri.slot_id, uri.object.as_deref(), uri.pin.clone()), (Some(7), None, Pin::Absent));
    assert_eq!(uri.to_string(), "pkcs11:manufacturer=SoftHSM%20project;model=SoftHSM%20v2;serial=abc;slot-id=7;id=%02");
}

#[test]
fn reads_pin_source_as_a_file_uri_or_a_path() {
    for (source, path) in
        [("file:/run/pin", "/run/pin"), ("file:///run/pin", "/run/pin"), ("file://localhost/run/pin", "/run/pin"), ("pin.txt", "pin.txt")]
    {
        let uri = parse(&format!("pkcs11:object=ops?{MODULE}&pin-source={source}")).unwrap();
        assert_eq!(uri.pin, Pin::File(PathBuf::from(path)), "{source}");
    }
    assert_eq!(
        parse(&format!("pkcs11:object=ops?{MODULE}&pin-source=https://pins.example/x")).unwrap_err(),
        bad("pin-source", "give a file: URI or a path")
    );
}

#[test]
fn never_shows_the_pin() {
    let uri = parse(&format!("pkcs11:object=ops?{MODULE}&pin-value=s3cr3t")).unwrap();
    assert!(!uri.to_string().contains("s3cr3t"));
    assert!(!format!("{uri:?}").contains("s3cr3t"), "{uri:?}");
    for text in [
        "pkcs11:object=ops?module-path=/m.so&pin-value=s3cr3t&pin-value=s3cr3t",
        "pkcs11:object=ops?module-path=/m.so&pin-value=s3cr3t&pin-source=/p",
        "pkcs11:object=ops?module-path=/m.so&pin-value=%zzs3cr3t",
        "pkcs11:object=ops?module-path=/m.so&s3cr3t",
        "pkcs11:object=ops?module-path=/m.so&pin-value=s3cr3t#frag",
    ] {
        let err = parse(text).unwrap_err();
        assert!(!err.to_string().contains("s3cr3t"), "{err}");
    }
}

#[test]
fn rejects_what_is_not_a_pkcs11_uri() {
    for text in ["", "pkcs11", "pkcs1:object=x", "/keys/ops.key", "file:pkcs11:object=x"] {
        assert_eq!(parse(text).unwrap_err(), UriError::NotPkcs11, "{text}");
    }
}

#[test]
fn rejects_a_uri_without_module_path() {
    assert_eq!(parse("pkcs11:object=ops").unwrap_err(), UriError::NoModule);
    assert_eq!(parse("pkcs11:object=ops?module-path=libsofthsm2.so").unwrap_err(), bad("module-path", "must be an absolute path"));
    assert!(
        matches!(parse("pkcs11:object=ops?module-name=softhsm2").unwrap_err(), UriError::Attribute { attribute, .. } if attribute == "module-name")
    );
}

#[test]
fn rejects_a_uri_that_selects_no_object() {
    assert_eq!(parse(&format!("pkcs11:token=airlock?{MODULE}")).unwrap_err(), UriError::NoObject);
}

#[test]
fn rejects_repeated_attributes() {
    assert_eq!(parse(&format!("pkcs11:object=a;object=b?{MODULE}")).unwrap_err(), UriError::Repeated("object".into()));
    assert_eq!(parse(&format!("pkcs11:object=a?{MODULE}&{MODULE}")).unwrap_err(), UriError::Repeated("module-path".into()));
}

#[test]
fn rejects_unsupported_attributes() {
    for (text, name) in [
        (format!("pkcs11:object=a;library-version=1?{MODULE}"), "library-version"),
        (format!("pkcs11:object=a?{MODULE}&x-vendor=1"), "x-vendor"),
    ] {
        assert_eq!(parse(&text).unwrap_err(), UriError::Unsupported(name.into()));
    }
}

#[test]
fn rejects_bad_values() {
    let cases = [
        ("pkcs11:object=a;type=public", "type"),
        ("pkcs11:object=a;slot-id=one", "slot-id"),
        ("pkcs11:object=%4", "object"),
        ("pkcs11:object=%ff", "object"),
        ("pkcs11:id", "id"),
        ("pkcs11:Object=a", "Object"),
        ("pkcs11:object=a#x", "#"),
    ];
    for (text, attribute) in cases {
        let err = parse(&format!("{text}?{MODULE}")).unwrap_err();
        assert!(matches!(&err, UriError::Attribute { attribute: a, .. } if a == attribute), "{text}: {err:?}");
        assert!(err.to_string().contains(attribute), "{err}");
    }
}

#[test]
fn object_and_token_attributes_read_back_as_given() {
    let uri = parse(&format!("pkcs11:token=t;object=a%3Bb;id=%00?{MODULE}")).unwrap();
    assert_eq!((uri.token_attributes(), uri.object_attributes()), ("token=t".into(), "object=a%3Bb;id=%00".into()));
    assert_eq!(parse(&format!("pkcs11:{}?{MODULE}", uri.object_attributes())).unwrap().object.as_deref(), Some("a;b"));
}
