//! Initialises a SoftHSM2 token and generates key pairs inside it, for `tests/pkcs11.rs`.
//! SoftHSM reads `SOFTHSM2_CONF` when its module is initialised, so this runs as a process
//! of its own with that variable set, rather than the test changing its own environment
//! under its threads.
//!
//! Usage: `SOFTHSM2_CONF=CONF softhsm-keygen MODULE DIR TOKEN-LABEL SO-PIN PIN KEY...`,
//! each KEY `label:id:ed25519` or `label:id:p256`; each Ed25519 public key is written raw
//! (32 bytes) to `DIR/<label>-<id>.raw`.

use std::path::Path;

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::types::AuthPin;

const ED25519_OID: [u8; 5] = [0x06, 0x03, 0x2b, 0x65, 0x70];
const P256_OID: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [module, dir, label, so_pin, pin, keys @ ..] = args.as_slice() else {
        panic!("usage: softhsm-keygen MODULE DIR TOKEN-LABEL SO-PIN PIN KEY...")
    };
    let pkcs11 = Pkcs11::new(module).expect("the module loads");
    pkcs11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)).expect("C_Initialize");
    let free = pkcs11.get_slots_with_token().expect("slots")[0];
    let so_pin = AuthPin::from(so_pin.as_str());
    pkcs11.init_token(free, &so_pin, label).expect("C_InitToken");
    // SoftHSM moves an initialised token to a slot of its own.
    let slot = pkcs11
        .get_slots_with_token()
        .expect("slots")
        .into_iter()
        .find(|s| pkcs11.get_token_info(*s).is_ok_and(|t| t.label() == label))
        .expect("the token");
    let session = pkcs11.open_rw_session(slot).expect("session");
    session.login(UserType::So, Some(&so_pin)).expect("SO login");
    session.init_pin(&AuthPin::from(pin.as_str())).expect("C_InitPIN");
    session.logout().expect("logout");
    session.login(UserType::User, Some(&AuthPin::from(pin.as_str()))).expect("user login");
    for key in keys {
        let [name, id, kind] = key.split(':').collect::<Vec<_>>()[..] else { panic!("KEY is label:id:kind, not {key}") };
        let id: u8 = id.parse().expect("an id of one byte");
        let named = |mut attrs: Vec<Attribute>| {
            attrs.extend([Attribute::Token(true), Attribute::Label(name.as_bytes().to_vec()), Attribute::Id(vec![id])]);
            attrs
        };
        let (mechanism, params) = match kind {
            "ed25519" => (Mechanism::EccEdwardsKeyPairGen, ED25519_OID.to_vec()),
            "p256" => (Mechanism::EccKeyPairGen, P256_OID.to_vec()),
            other => panic!("unknown key kind {other}"),
        };
        let public = named(vec![Attribute::Verify(true), Attribute::EcParams(params)]);
        let private =
            named(vec![Attribute::Private(true), Attribute::Sensitive(true), Attribute::Extractable(false), Attribute::Sign(true)]);
        let (public, _) = session.generate_key_pair(&mechanism, &public, &private).expect("C_GenerateKeyPair");
        if kind == "ed25519" {
            write_raw(&session, public, &Path::new(dir).join(format!("{name}-{id}.raw")));
        }
    }
}

/// The last 32 bytes of `CKA_EC_POINT`: the raw Ed25519 point inside its DER octet string.
fn write_raw(session: &Session, object: ObjectHandle, path: &Path) {
    let Some(Attribute::EcPoint(point)) = session.get_attributes(object, &[AttributeType::EcPoint]).expect("CKA_EC_POINT").pop() else {
        panic!("no CKA_EC_POINT")
    };
    std::fs::write(path, &point[point.len() - 32..]).expect("public key written");
}
