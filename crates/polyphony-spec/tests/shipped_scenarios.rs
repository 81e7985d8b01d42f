//! Every scenario shipped under `configs/scenarios/` parses and validates.

use polyphony_spec::Scenario;
use std::path::Path;

#[test]
fn every_shipped_scenario_is_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/scenarios");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("configs/scenarios exists") {
        let path = entry.expect("readable entry").path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).expect("readable scenario");
            let name = path.display().to_string();
            let s = Scenario::from_toml(&text, &name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.classes.len(), s.mix.len(), "{name}: every class has a workload");
            seen += 1;
        }
    }
    assert!(
        seen >= 4,
        "expected the reference and adaptation scenarios, found {seen}"
    );
}
