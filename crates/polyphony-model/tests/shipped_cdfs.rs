//! The size CDFs are compiled into the model crate; this checks, from outside the library, that
//! every file under `models/cdf` is among them and that each one parses with its source named.

use polyphony_model::SizeCdf;
use std::path::Path;

#[test]
fn every_cdf_file_in_the_repository_is_shipped_and_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/cdf");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("models/cdf")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "cdf"))
        .map(|p| p.file_stem().expect("stem").to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        SizeCdf::shipped_names().collect::<Vec<_>>(),
        "compile every models/cdf file in"
    );
    for n in files {
        let c = SizeCdf::shipped(&n).unwrap();
        assert!(c.mean() > 0.0 && !c.source().is_empty() && c.name() == n, "{n}");
    }
}
