//! Opens the private key a [`Pkcs11Uri`] names in its token and signs with it through
//! `CKM_EDDSA`, the key never leaving the device. Entry point: [`TokenSigner::open`].
//!
//! One module is loaded and initialised once per process, whatever the number of keys in
//! it; each key has a session of its own, used by one thread at a time, as PKCS#11 asks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use airlock_bundle::signer::checked;
use airlock_bundle::{PublicKey, SignError, Signer};
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as CkError, RvError};
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;

use super::Pkcs11Error;
use super::uri::{Pin, Pkcs11Uri};

/// `CKA_EC_PARAMS` of Ed25519: the DER OID 1.3.101.112 (RFC 8410), or the curve's name as a
/// PrintableString, which PKCS#11 3.0 allows as well.
const ED25519_OID: [u8; 5] = [0x06, 0x03, 0x2b, 0x65, 0x70];
const ED25519_NAME: &[u8] = b"\x13\x0cedwards25519";

/// A private Ed25519 key in a PKCS#11 token.
pub struct TokenSigner {
    session: Mutex<Session>,
    key: ObjectHandle,
    public: PublicKey,
    uri: String,
}

impl TokenSigner {
    /// Finds the one private Ed25519 key `uri` names, logs in with its PIN, and checks the
    /// key signs what its public key verifies.
    pub fn open(uri: &Pkcs11Uri) -> Result<TokenSigner, Pkcs11Error> {
        let shown = uri.to_string();
        let pkcs11 = module(&uri.module_path)?;
        let slot = find_token(&pkcs11, uri)?;
        let device = |e: CkError| Pkcs11Error::Device { uri: shown.clone(), message: describe(&e) };
        let session = pkcs11.open_ro_session(slot).map_err(device)?;
        login(&session, uri)?;
        let key = one_object(&session, uri, ObjectClass::PRIVATE_KEY)?;
        let found = session.get_attributes(key, &[AttributeType::KeyType, AttributeType::EcParams]).map_err(device)?;
        let key_type = found.iter().find_map(|a| if let Attribute::KeyType(t) = a { Some(*t) } else { None });
        let params = found.iter().find_map(|a| if let Attribute::EcParams(p) = a { Some(p.as_slice()) } else { None });
        let ed25519 = key_type == Some(KeyType::EC_EDWARDS) && matches!(params, Some(p) if p == ED25519_OID || p == ED25519_NAME);
        if !ed25519 {
            let found = key_type.map_or_else(|| "no key type".to_string(), |t| t.to_string());
            return Err(Pkcs11Error::NotEd25519 { uri: shown, found });
        }
        let public = public_key(&session, uri)?;
        let signer = TokenSigner { session: Mutex::new(session), key, public, uri: shown };
        signer.sign(b"airlock-publisher: does the token's key match its public key?").map_err(|e| match e {
            SignError::BadSignature { .. } => Pkcs11Error::Mismatch { uri: signer.uri.clone() },
            other => Pkcs11Error::Device { uri: signer.uri.clone(), message: other.to_string() },
        })?;
        Ok(signer)
    }
}

impl Signer for TokenSigner {
    fn public(&self) -> PublicKey {
        self.public
    }

    fn sign(&self, message: &[u8]) -> Result<[u8; 64], SignError> {
        let mechanism = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure));
        let session = self.session.lock().expect("not poisoned");
        let failed = |message: String| SignError::Device { key_id: self.public.key_id(), message: format!("{}: {message}", self.uri) };
        let signature = session.sign(&mechanism, self.key, message).map_err(|e| failed(describe(&e)))?;
        let signature: [u8; 64] =
            signature.try_into().map_err(|s: Vec<u8>| failed(format!("CKM_EDDSA returned {} bytes, not an Ed25519 signature", s.len())))?;
        checked(&self.public, message, signature)
    }
}

/// The module at `path`, loaded and initialised once per process: a second
/// `C_Initialize` would be refused.
fn module(path: &Path) -> Result<Pkcs11, Pkcs11Error> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, Pkcs11>>> = OnceLock::new();
    let mut loaded = LOADED.get_or_init(Default::default).lock().expect("not poisoned");
    if let Some(pkcs11) = loaded.get(path) {
        return Ok(pkcs11.clone());
    }
    let failed = |e: CkError| Pkcs11Error::Module { path: path.to_path_buf(), message: describe(&e) };
    let pkcs11 = Pkcs11::new(path).map_err(failed)?;
    pkcs11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)).map_err(failed)?;
    loaded.insert(path.to_path_buf(), pkcs11.clone());
    Ok(pkcs11)
}

/// The one slot whose token matches the URI's token attributes.
fn find_token(pkcs11: &Pkcs11, uri: &Pkcs11Uri) -> Result<Slot, Pkcs11Error> {
    let device = |e: CkError| Pkcs11Error::Device { uri: uri.to_string(), message: describe(&e) };
    let matches = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
    let mut found = Vec::new();
    for slot in pkcs11.get_slots_with_token().map_err(device)? {
        let info = pkcs11.get_token_info(slot).map_err(device)?;
        if matches(&uri.token, info.label())
            && matches(&uri.manufacturer, info.manufacturer_id())
            && matches(&uri.model, info.model())
            && matches(&uri.serial, info.serial_number())
            && uri.slot_id.is_none_or(|id| id == slot.id())
        {
            found.push(slot);
        }
    }
    match found.as_slice() {
        [slot] => Ok(*slot),
        [] => Err(Pkcs11Error::NoToken { attributes: uri.token_attributes() }),
        more => Err(Pkcs11Error::TwoTokens { attributes: uri.token_attributes(), count: more.len() }),
    }
}

/// Logs in as the user when the URI gives a PIN. The PIN goes to the token and nowhere
/// else: no message carries it.
fn login(session: &Session, uri: &Pkcs11Uri) -> Result<(), Pkcs11Error> {
    let pin = match &uri.pin {
        Pin::Absent => return Ok(()),
        Pin::Value(pin) => AuthPin::from(pin.as_str()),
        Pin::File(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Pkcs11Error::PinSource { path: path.clone(), message: e.to_string() })?;
            let pin = text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&text);
            AuthPin::from(pin)
        }
    };
    match session.login(UserType::User, Some(&pin)) {
        // Another key of this token logged this process in already.
        Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => Ok(()),
        Err(e) => Err(Pkcs11Error::Login { attributes: uri.token_attributes(), message: describe(&e) }),
    }
}

/// The one object of `class` with the URI's label and id.
fn one_object(session: &Session, uri: &Pkcs11Uri, class: ObjectClass) -> Result<ObjectHandle, Pkcs11Error> {
    let mut template = vec![Attribute::Class(class)];
    if let Some(label) = &uri.object {
        template.push(Attribute::Label(label.as_bytes().to_vec()));
    }
    if let Some(id) = &uri.id {
        template.push(Attribute::Id(id.clone()));
    }
    let found = session.find_objects(&template).map_err(|e| Pkcs11Error::Device { uri: uri.to_string(), message: describe(&e) })?;
    let what = if class == ObjectClass::PRIVATE_KEY { "private key" } else { "public key" };
    let logged_in = !matches!(uri.pin, Pin::Absent);
    match found.as_slice() {
        [key] => Ok(*key),
        [] => Err(Pkcs11Error::NoKey { what, attributes: uri.object_attributes(), logged_in }),
        more => Err(Pkcs11Error::TwoKeys { what, attributes: uri.object_attributes(), count: more.len() }),
    }
}

/// The public key beside the private one: the public key object of the same label and id.
fn public_key(session: &Session, uri: &Pkcs11Uri) -> Result<PublicKey, Pkcs11Error> {
    let object = one_object(session, uri, ObjectClass::PUBLIC_KEY)?;
    let bad = |why: String| Pkcs11Error::BadPublicKey { uri: uri.to_string(), why };
    let found = session.get_attributes(object, &[AttributeType::EcPoint]).map_err(|e| bad(describe(&e)))?;
    let Some(Attribute::EcPoint(point)) = found.into_iter().next() else { return Err(bad("no CKA_EC_POINT".into())) };
    // PKCS#11 3.0 says a DER OCTET STRING; some tokens give the 32 bytes bare.
    let raw = match point.as_slice() {
        [0x04, 0x20, rest @ ..] => rest,
        bare => bare,
    };
    let raw: &[u8; 32] = raw.try_into().map_err(|_| bad(format!("CKA_EC_POINT of {} bytes is not an Ed25519 point", point.len())))?;
    PublicKey::from_bytes(raw).map_err(|e| bad(e.to_string()))
}

/// A cryptoki error as the function and the `CKR_` condition, without the long prose.
fn describe(e: &CkError) -> String {
    match e {
        CkError::Pkcs11(rv, function) => format!("{function}: {rv:?}"),
        other => other.to_string(),
    }
}
