//! Regenerates `testdata/vectors/` (spec section 13). Deterministic: running it twice
//! changes nothing, and `tests/vectors.rs` fails if the checked-in files differ from what
//! this produces.
//!
//!     cargo run -p airlock-store --features testing --example make-vectors

fn main() -> std::io::Result<()> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/vectors");
    for (path, bytes) in airlock_store::vectors::all() {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("vector paths have a parent"))?;
        std::fs::write(&path, bytes)?;
    }
    println!("wrote {}", root.display());
    Ok(())
}
