//! What unit tests of archive readers share: a gzip'ed tar written from `(path, text)`
//! pairs, as `tar -czf` would write it.

pub fn tar_gz(files: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, path, text.as_bytes()).expect("append");
    }
    builder.into_inner().expect("tar").finish().expect("gzip")
}
